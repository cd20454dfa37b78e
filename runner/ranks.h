// Data-parallel runs (gptbench-run --ranks N, or --gpus N): the benchmarks of the families
// with collectives run in N processes of the benchmark binary at once, one per rank (one GPU
// each), which meet at a c10d TCPStore that rank 0 serves on a free localhost port
// (fixtures/dist.h). Rank 0's JSON is the family's result; the other ranks' output is read only
// for a failure's reason. When any rank dies, all of them are stopped and the benchmark rank 0
// was running is recorded as crashed, naming the rank; a hung collective ends by c10d's
// timeout (GPTBENCH_COMM_TIMEOUT_S, set from --benchmark-timeout) or by the runner's own.
#pragma once

#include <string>
#include <vector>

#include "names.h"

namespace gptbench::runner {

// Whether a benchmark runs on every rank: comm/… and model/train_step_dp/….
bool runs_on_ranks(const std::string& benchmark);

// The environment of rank `rank` of `world`: RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR
// (MASTER_ADDR of this process when set, else 127.0.0.1), MASTER_PORT, and
// GPTBENCH_COMM_TIMEOUT_S when timeout_s > 0.
std::vector<std::string> rank_variables(int rank, int world, int port, double timeout_s);

// A TCP port on 127.0.0.1 that nothing listens on now. Throws when none can be had.
int free_port();

// NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1, NVSHMEM_DISABLE_NVLS=1 in this
// process's environment, so every child inherits NVLink multicast off.
void keep_multicast_off_env();

// A family's benchmarks split for a run on `ranks` ranks: with ranks > 1, the benchmarks that
// run on every rank form a family of their own (same name, `on_ranks` set) after the rest.
struct RunFamily {
  Family family;
  bool on_ranks = false;
  bool split = false;  // the family's other benchmarks are in another RunFamily
};
std::vector<RunFamily> split_for_ranks(const std::vector<Family>& families, int ranks);

}  // namespace gptbench::runner
