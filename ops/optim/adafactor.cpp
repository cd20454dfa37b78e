#include "ops/optim/adafactor.h"

#include <algorithm>
#include <cmath>
#include <limits>

#ifdef GPTBENCH_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>

#include "ops/optim/adafactor_kernels.h"
#endif

namespace gptbench {

Adafactor::Adafactor(std::vector<at::Tensor> params, AdafactorOptions options,
                     OptimBackend backend)
    : OptimizerWith("adafactor", std::move(params), options, backend) {
  for (const auto& p : params_) {
    if (p.dim() > 1) {
      auto rs = p.sizes().vec();
      rs.back() = 1;
      auto cs = p.sizes().vec();
      cs[cs.size() - 2] = 1;
      row_.push_back(at::zeros(rs, p.options()));
      col_.push_back(at::zeros(cs, p.options()));
      var_.emplace_back();
    } else {
      row_.emplace_back();
      col_.emplace_back();
      var_.push_back(at::zeros_like(p));
    }
  }
}

double Adafactor::eps1() const {
  return opt_.eps1 ? *opt_.eps1 : static_cast<double>(std::numeric_limits<float>::epsilon());
}

int64_t Adafactor::state_bytes() const {
  int64_t b = 0;
  for (size_t i = 0; i < params_.size(); ++i)
    b += params_[i].dim() > 1 ? row_[i].nbytes() + col_[i].nbytes() : var_[i].nbytes();
  return b;
}

// The operations of torch.optim.Adafactor's single-tensor path, in its order.
void Adafactor::reference_one(size_t i, const at::Tensor& grad) {
  auto& p = params_[i];
  const at::Tensor g = grad.to(at::kFloat);
  const double t = static_cast<double>(step_);
  const double w = std::pow(t, opt_.beta2_decay);  // 1 − β2_t
  const double rho = std::min(opt_.lr, 1 / std::sqrt(t));
  const double e1 = eps1();
  const double rms_p =
      p.norm().item<double>() / std::sqrt(static_cast<double>(std::max<int64_t>(p.numel(), 1)));
  const double alpha = (opt_.scale_parameter ? std::max(opt_.eps2, rms_p) : 1.0) * rho;
  if (opt_.weight_decay != 0) p.mul_(1 - opt_.lr * opt_.weight_decay);
  at::Tensor var;
  if (g.dim() > 1) {
    const auto row_mean =
        at::linalg_vector_norm(g, 2, {-1}, /*keepdim=*/true).square_().div_(g.size(-1));
    row_[i].lerp_(row_mean, w);
    const auto col_mean =
        at::linalg_vector_norm(g, 2, {-2}, /*keepdim=*/true).square_().div_(g.size(-2));
    col_[i].lerp_(col_mean, w);
    var = at::matmul(row_[i], col_[i]);
    var.div_(row_[i].mean({-2}, /*keepdim=*/true).clamp_(e1));
  } else {
    var_[i].lerp_(g * g, w);
    var = var_[i].clone();
  }
  auto update = var.clamp_(e1 * e1).rsqrt_().mul_(g);
  const double denom =
      std::max(1.0, update.norm().item<double>() /
                        (std::sqrt(static_cast<double>(std::max<int64_t>(update.numel(), 1))) * opt_.d));
  p.add_(update, -alpha / denom);
}

void Adafactor::step_reference(const std::vector<at::Tensor>& grads) {
  for (size_t i = 0; i < params_.size(); ++i) reference_one(i, grads[i]);
}

void Adafactor::step_fused(const std::vector<at::Tensor>& grads) {
#ifdef GPTBENCH_WITH_CUDA
  using namespace optim;
  const ElemType gt = grad_type_of(grads);
  if (tables_.stale(params_, grads)) {
    // Scratch layout: two stats per fused tensor, the row and column sums, the band counters;
    // zeroed once here, kept zero by the steps (adafactor_kernels.h).
    std::vector<size_t> fused;
    unfused_.clear();
    for (size_t i = 0; i < params_.size(); ++i)
      (params_[i].dim() > 2 ? unfused_ : fused).push_back(i);
    // Tile geometry of a matrix: column pieces of ≤ 1,024 (multiples of 4); rows so a tile
    // holds ~64K elements: each tile ends with one global atomic per column, so taller tiles
    // mean fewer atomics on the same few column addresses (wte (50257, 768): ~630 tiles, 0.5M
    // column atomics), while GPT-2 small still has ~2,000 tiles for ~500 resident blocks.
    struct Geometry {
      int64_t width, tile_rows, pieces, bands;
    };
    auto geometry = [](int64_t rows, int64_t cols) {
      const int64_t pieces = (cols + kAdafactorMaxTileCols - 1) / kAdafactorMaxTileCols;
      const int64_t width =
          std::min<int64_t>(kAdafactorMaxTileCols, ((cols + pieces - 1) / pieces + 3) / 4 * 4);
      const int64_t tile_rows = std::max<int64_t>(8, kAdafactorTileElems / width / 8 * 8);
      return Geometry{width, tile_rows, (cols + width - 1) / width,
                      (rows + tile_rows - 1) / tile_rows};
    };
    size_t floats = 0, counters = 0;
    for (size_t i : fused)
      if (params_[i].dim() == 2) {
        floats += params_[i].size(0) + params_[i].size(1);
        counters += geometry(params_[i].size(0), params_[i].size(1)).bands;
      }
    const size_t stats_bytes = 2 * fused.size() * sizeof(AdafactorStats);
    scratch_ = at::zeros({static_cast<int64_t>(stats_bytes + (floats + counters) * 4 + 16)},
                         params_[0].options().dtype(at::kByte));
    auto* base = static_cast<unsigned char*>(scratch_.data_ptr());
    auto* stats = reinterpret_cast<AdafactorStats*>(base);
    float* sums = reinterpret_cast<float*>(base + stats_bytes);
    auto* band_done = reinterpret_cast<uint32_t*>(sums + floats);

    std::vector<AdafactorTensor> rows;
    std::vector<AdafactorTile> tiles;
    for (size_t k = 0; k < fused.size(); ++k) {
      const size_t i = fused[k];
      const auto& p = params_[i];
      auto t = tensor_row<AdafactorTensor>(p, grads[i]);
      t.stats = stats + 2 * k;
      t.factored = p.dim() == 2;
      const int32_t tidx = static_cast<int32_t>(k);
      if (t.factored) {
        t.rows = p.size(0);
        t.cols = p.size(1);
        t.row = row_[i].data_ptr<float>();
        t.col = col_[i].data_ptr<float>();
        t.row_sum = sums;
        t.col_sum = sums + t.rows;
        sums += t.rows + t.cols;
        t.vec = t.cols % 4 == 0 && vec_aligned(gt, t.g, {t.p, t.col});
        const Geometry geo = geometry(t.rows, t.cols);
        t.band_done = band_done;
        band_done += geo.bands;
        t.pieces = static_cast<int32_t>(geo.pieces);
        t.num_bands = static_cast<int32_t>(geo.bands);
        for (int64_t r0 = 0; r0 < t.rows; r0 += geo.tile_rows)
          for (int64_t c0 = 0; c0 < t.cols; c0 += geo.width)
            tiles.push_back({r0, c0, tidx, static_cast<int32_t>(std::min(geo.tile_rows, t.rows - r0)),
                             static_cast<int32_t>(std::min(geo.width, t.cols - c0)),
                             static_cast<int32_t>(r0 / geo.tile_rows)});
      } else {
        t.rows = 1;
        t.cols = t.n;
        t.v = var_[i].data_ptr<float>();
        t.vec = vec_aligned(gt, t.g, {t.p, t.v});
        for (int64_t c0 = 0; c0 < t.n; c0 += kChunkElems)
          tiles.push_back({0, c0, tidx, 1, static_cast<int32_t>(std::min(kChunkElems, t.n - c0)), 0});
      }
      rows.push_back(t);
    }
    tables_.store(rows, tiles, params_[0].device());
  }
  const double t = static_cast<double>(step_);
  AdafactorScalars s{};
  s.w = static_cast<float>(std::pow(t, opt_.beta2_decay));
  s.eps1 = static_cast<float>(eps1());
  s.eps1_sq = static_cast<float>(eps1() * eps1());
  s.eps2 = static_cast<float>(opt_.eps2);
  s.rho = static_cast<float>(std::min(opt_.lr, 1 / std::sqrt(t)));
  s.d = static_cast<float>(opt_.d);
  s.decay = static_cast<float>(1 - opt_.lr * opt_.weight_decay);
  s.scale_parameter = opt_.scale_parameter ? 1 : 0;
  s.parity = static_cast<int32_t>(step_ & 1);
  const int64_t num_tensors = static_cast<int64_t>(params_.size() - unfused_.size());
  if (num_tensors > 0)
    adafactor_step_cuda(tables_.rows<AdafactorTensor>(), num_tensors,
                        tables_.items<AdafactorTile>(), tables_.num_items(), gt, s,
                        at::cuda::getCurrentCUDAStream().stream());
  for (size_t i : unfused_) reference_one(i, grads[i]);
#else
  no_fused_kernels();
#endif
}

}  // namespace gptbench
