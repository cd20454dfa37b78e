# Lane-level model of ldmatrix.x4 (+.trans) and mma.m16n8k16 (the PTX ISA fragment layouts written
# out in ops/attention/flash_common.cuh), driven by the lane-address formulas, C->A fragment
# reuse and dS^T store pattern transcribed by hand from ops/attention/flash_{fwd,bwd}.cu, and
# checked against plain matrix products for every head dim and the kernels' tile sizes.
# A developer tool, not part of CTest (no GPU needed; LibTorch's Python package only):
#   python3 tests/ops/attention/flash_fragment_model.py
# It checks the index algebra under the stated PTX semantics; it cannot check the semantics
# themselves, the pipeline synchronisation or the softmax (the GPU tests do).
import torch
torch.manual_seed(0)
class _NP:
    nan = float('nan')
    def zeros(self, shape): return torch.zeros(shape, dtype=torch.float64)
    def full(self, shape, v): return torch.full(shape, v, dtype=torch.float64)
    def array(self, rows): return torch.stack(list(rows))
    def concatenate(self, xs, axis): return torch.cat(xs, dim=axis)
    def isnan(self, x): return torch.isnan(x)
    def abs(self, x): return x.abs()
np = _NP()
class _RNG:
    def standard_normal(self, shape): return torch.randn(shape, dtype=torch.float64)
    def random(self, shape): return torch.rand(shape, dtype=torch.float64)
rng = _RNG()

def ldmatrix_x4(smem, row_col_of_lane, trans=False):
    # smem: 2-D array (rows, cols) of elements; row_col_of_lane(lane) -> (row, col) start of the
    # 16-byte row that lane provides (lanes 8i..8i+7 -> matrix i rows 0..7).
    mats = []
    for i in range(4):
        rows = [row_col_of_lane(8 * i + r) for r in range(8)]
        M = np.array([smem[r, c:c + 8] for (r, c) in rows])  # 8x8
        mats.append(M)
    regs = np.zeros((32, 4, 2))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for i in range(4):
            M = mats[i]
            regs[lane, i] = torch.stack([M[2 * t, g], M[2 * t + 1, g]]) if trans else torch.stack([M[g, 2 * t], M[g, 2 * t + 1]])
    return regs

def A_from_frags(a):  # a: (32, 4, 2) -> 16x16
    A = np.full((16, 16), np.nan)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        A[g, 2*t:2*t+2] = a[lane, 0]; A[g+8, 2*t:2*t+2] = a[lane, 1]
        A[g, 2*t+8:2*t+10] = a[lane, 2]; A[g+8, 2*t+8:2*t+10] = a[lane, 3]
    return A

def B_from_frags(b0, b1):  # (32,2) each -> 16x8 (K x N)
    B = np.full((16, 8), np.nan)
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        B[2*t:2*t+2, g] = b0[lane]; B[2*t+8:2*t+10, g] = b1[lane]
    return B

def C_to_mat(c):  # c: (32,4) -> 16x8
    C = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        C[g, 2*t:2*t+2] = c[lane, 0:2]; C[g+8, 2*t:2*t+2] = c[lane, 2:4]
    return C

def mat_to_C(C):
    c = np.zeros((32, 4))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        c[lane, 0:2] = C[g, 2*t:2*t+2]; c[lane, 2:4] = C[g+8, 2*t:2*t+2]
    return c

def mma(c, a, b0, b1):
    A = A_from_frags(a); B = B_from_frags(b0, b1)
    assert not np.isnan(A).any() and not np.isnan(B).any()
    return mat_to_C(C_to_mat(c) + A @ B)

def c_to_a(c_lo, c_hi):  # C fragments of n-tiles 2j, 2j+1 -> A fragment of k-chunk j
    a = np.zeros((32, 4, 2))
    a[:, 0] = c_lo[:, 0:2]; a[:, 1] = c_lo[:, 2:4]; a[:, 2] = c_hi[:, 0:2]; a[:, 3] = c_hi[:, 2:4]
    return a

def warp_rows(c_tiles, nrows=16):  # list of C frags along n -> (16, 8*len)
    return np.concatenate([C_to_mat(c) for c in c_tiles], axis=1)

def check(name, got, want):
    err = (got - want).abs().max().item()
    print(f"{name:40s} max err {err:.2e}", "OK" if err < 1e-9 else "FAIL")
    assert err < 1e-9

for D in (16, 32, 64, 128):
    stride = D + 8
    # ------- forward (flash_tiles.h): Q tile of 128 rows; warp w owns MT 16-row slices from
    # row w*16*MT (MT = 2 for d >= 64, else 1); K, V tiles of BN rows (128 at d = 64, else 64) ---
    BM, BN = 128, (128 if D == 64 else 64)
    MT = 2 if D >= 64 else 1
    warps = BM // (16 * MT)
    Q = np.zeros((BM, stride)); Q[:, :D] = rng.standard_normal((BM, D))
    K = np.zeros((BN, stride)); K[:, :D] = rng.standard_normal((BN, D))
    V = np.zeros((BN, stride)); V[:, :D] = rng.standard_normal((BN, D))
    for warp, mt in [(w, m) for w in (0, warps - 1) for m in range(MT)]:
        r0 = warp*16*MT + mt*16
        # q_lane = ((warp*MT*16 + (lane&15))*kStride + (lane>>4)*8)   (+ mt*16 rows, kk*16 cols)
        qf = [ldmatrix_x4(Q, lambda l, kk=kk: (r0 + (l & 15), (l >> 4)*8 + kk*16)) for kk in range(D//16)]
        s = [np.zeros((32, 4)) for _ in range(BN // 8)]
        for kk in range(D // 16):
            for nn in range(BN // 16):
                # k_lane = ((lane&7) + (lane>>4)*8)*kStride + ((lane>>3)&1)*8; + nn*16 rows, kk*16 cols
                kb = ldmatrix_x4(K, lambda l: (nn*16 + (l & 7) + (l >> 4)*8, kk*16 + ((l >> 3) & 1)*8))
                s[2*nn] = mma(s[2*nn], qf[kk], kb[:, 0], kb[:, 1])
                s[2*nn+1] = mma(s[2*nn+1], qf[kk], kb[:, 2], kb[:, 3])
        S = warp_rows(s)
        check(f"fwd d={D} w={warp} mt={mt} S=QK^T", S, Q[r0:r0+16, :D] @ K[:, :D].T)
        P = rng.random((16, BN)); pc = [mat_to_C(P[:, 8*i:8*i+8]) for i in range(BN // 8)]
        o = [np.zeros((32, 4)) for _ in range(D // 8)]
        for kc in range(BN // 16):
            a = c_to_a(pc[2*kc], pc[2*kc+1])
            for dn in range(D // 16):
                # v_lane = ((lane&7) + ((lane>>3)&1)*8)*kStride + (lane>>4)*8; + kc*16 rows, dn*16 cols
                vb = ldmatrix_x4(V, lambda l: (kc*16 + (l & 7) + ((l >> 3) & 1)*8, dn*16 + (l >> 4)*8), trans=True)
                o[2*dn] = mma(o[2*dn], a, vb[:, 0], vb[:, 1])
                o[2*dn+1] = mma(o[2*dn+1], a, vb[:, 2], vb[:, 3])
        check(f"fwd d={D} w={warp} mt={mt} O=PV", warp_rows(o), P @ V[:, :D])

    # ------- backward: key tile BN (128 for d >= 64, else 64; warp w owns keys w*16..),
    # query tiles BMq ----------------------------------------------------------------------------
    BMq = 32 if D == 128 else 64
    BN = 128 if D >= 64 else 64
    warps = BN // 16
    sstride = BMq + 8
    Qb = np.zeros((BMq, stride)); Qb[:, :D] = rng.standard_normal((BMq, D))
    dOb = np.zeros((BMq, stride)); dOb[:, :D] = rng.standard_normal((BMq, D))
    Kb = np.zeros((BN, stride)); Kb[:, :D] = rng.standard_normal((BN, D))
    dST_smem = np.zeros((BN, sstride))
    dS_full = np.zeros((BN, BMq))  # dS^T (keys x queries)
    for warp in range(warps):
        st = [np.zeros((32, 4)) for _ in range(BMq // 8)]
        for kk in range(D // 16):
            # a_lane = (warp*16 + (lane&15))*kStride + (lane>>4)*8
            ak = ldmatrix_x4(Kb, lambda l: (warp*16 + (l & 15), kk*16 + (l >> 4)*8))
            for nn in range(BMq // 16):
                # bn_lane = ((lane&7) + (lane>>4)*8)*kStride + ((lane>>3)&1)*8
                bq = ldmatrix_x4(Qb, lambda l: (nn*16 + (l & 7) + (l >> 4)*8, kk*16 + ((l >> 3) & 1)*8))
                st[2*nn] = mma(st[2*nn], ak, bq[:, 0], bq[:, 1])
                st[2*nn+1] = mma(st[2*nn+1], ak, bq[:, 2], bq[:, 3])
        check(f"bwd d={D} w={warp} S^T=KQ^T", warp_rows(st), Kb[warp*16:warp*16+16, :D] @ Qb[:, :D].T)
        PT = rng.random((16, BMq)); dST = rng.standard_normal((16, BMq))
        dS_full[warp*16:warp*16+16] = dST
        pc = [mat_to_C(PT[:, 8*i:8*i+8]) for i in range(BMq // 8)]
        dc = [mat_to_C(dST[:, 8*i:8*i+8]) for i in range(BMq // 8)]
        dv = [np.zeros((32, 4)) for _ in range(D // 8)]
        dk = [np.zeros((32, 4)) for _ in range(D // 8)]
        for kq in range(BMq // 16):
            ap = c_to_a(pc[2*kq], pc[2*kq+1]); ads = c_to_a(dc[2*kq], dc[2*kq+1])
            for dn in range(D // 16):
                # bt_lane = ((lane&7) + ((lane>>3)&1)*8)*kStride + (lane>>4)*8
                bo = ldmatrix_x4(dOb, lambda l: (kq*16 + (l & 7) + ((l >> 3) & 1)*8, dn*16 + (l >> 4)*8), trans=True)
                bq = ldmatrix_x4(Qb, lambda l: (kq*16 + (l & 7) + ((l >> 3) & 1)*8, dn*16 + (l >> 4)*8), trans=True)
                dv[2*dn] = mma(dv[2*dn], ap, bo[:, 0], bo[:, 1]); dv[2*dn+1] = mma(dv[2*dn+1], ap, bo[:, 2], bo[:, 3])
                dk[2*dn] = mma(dk[2*dn], ads, bq[:, 0], bq[:, 1]); dk[2*dn+1] = mma(dk[2*dn+1], ads, bq[:, 2], bq[:, 3])
            # dS^T stores: rows warp*16+g (+8), cols kq*16 + half*8 + 2*t4 <- ads[2*half], ads[2*half+1]
            for lane in range(32):
                g, t4 = lane >> 2, lane & 3
                for half in range(2):
                    col = kq*16 + half*8 + 2*t4
                    dST_smem[warp*16 + g, col:col+2] = ads[lane, 2*half]
                    dST_smem[warp*16 + g + 8, col:col+2] = ads[lane, 2*half + 1]
        check(f"bwd d={D} w={warp} dV=P^T dO", warp_rows(dv), PT @ dOb[:, :D])
        check(f"bwd d={D} w={warp} dK=dS^T Q", warp_rows(dk), dST @ Qb[:, :D])
    check(f"bwd d={D} dS^T smem", dST_smem[:, :BMq], dS_full)
    # dQ stage: warp -> rows dq_r0, cols dq_c0
    row_tiles = BMq // 16; col_split = warps // row_tiles; cols = D // col_split; chunk = min(cols, 64)
    dQ = np.zeros((BMq, D))
    for warp in range(warps):
        r0 = (warp % row_tiles) * 16; c0w = (warp // row_tiles) * cols
        for ch in range(cols // chunk):
            c0 = c0w + ch * chunk
            acc = [np.zeros((32, 4)) for _ in range(chunk // 8)]
            for kc in range(BN // 16):
                # ds_lane = ((lane&7) + (lane>>4)*8)*kSStride + ((lane>>3)&1)*8; + kc*16 rows, dq_r0 cols
                a = ldmatrix_x4(dST_smem, lambda l: (kc*16 + (l & 7) + (l >> 4)*8, r0 + ((l >> 3) & 1)*8), trans=True)
                for dn in range(chunk // 16):
                    bk = ldmatrix_x4(Kb, lambda l: (kc*16 + (l & 7) + ((l >> 3) & 1)*8, c0 + dn*16 + (l >> 4)*8), trans=True)
                    acc[2*dn] = mma(acc[2*dn], a, bk[:, 0], bk[:, 1]); acc[2*dn+1] = mma(acc[2*dn+1], a, bk[:, 2], bk[:, 3])
            dQ[r0:r0+16, c0:c0+chunk] = warp_rows(acc)
    check(f"bwd d={D} dQ=dS K", dQ, dS_full.T @ Kb[:, :D])
print("all fragment checks passed")
