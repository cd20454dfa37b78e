#include "ranks.h"

#include <cstdlib>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace gptbench::runner {

bool runs_on_ranks(const std::string& benchmark) {
  return benchmark.rfind("comm/", 0) == 0 || benchmark.rfind("model/train_step_dp/", 0) == 0;
}

std::vector<std::string> rank_variables(int rank, int world, int port, double timeout_s) {
  // The ranks share this host; MASTER_ADDR, when set, names the address rank 0 serves on.
  const char* addr = std::getenv("MASTER_ADDR");
  std::vector<std::string> v = {"RANK=" + std::to_string(rank), "LOCAL_RANK=" + std::to_string(rank),
                                "WORLD_SIZE=" + std::to_string(world),
                                std::string("MASTER_ADDR=") + (addr && *addr ? addr : "127.0.0.1"),
                                "MASTER_PORT=" + std::to_string(port)};
  if (timeout_s > 0) {
    std::ostringstream t;
    t << timeout_s;
    v.push_back("GPTBENCH_COMM_TIMEOUT_S=" + t.str());
  }
  return v;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // the kernel picks one
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error(std::string("no free port on 127.0.0.1: ") + std::strerror(err));
  return ntohs(addr.sin_port);
}

void keep_multicast_off_env() {
  ::setenv("NCCL_NVLS_ENABLE", "0", 1);
  ::setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 1);
  ::setenv("NVSHMEM_DISABLE_NVLS", "1", 1);
}

std::vector<RunFamily> split_for_ranks(const std::vector<Family>& families, int ranks) {
  std::vector<RunFamily> out;
  for (const Family& f : families) {
    if (ranks <= 1) {
      out.push_back({f, false});
      continue;
    }
    Family plain{f.name, {}}, ranked{f.name, {}};
    for (const std::string& b : f.benchmarks) (runs_on_ranks(b) ? ranked : plain).benchmarks.push_back(b);
    const bool split = !plain.benchmarks.empty() && !ranked.benchmarks.empty();
    if (!plain.benchmarks.empty()) out.push_back({std::move(plain), false, split});
    if (!ranked.benchmarks.empty()) out.push_back({std::move(ranked), true, split});
  }
  return out;
}

}  // namespace gptbench::runner
