#pragma once
// Sets LibTorch's TF32 switch for matmuls for the guard's lifetime, restoring it after.
#include <ATen/Context.h>

namespace gptbench {

class Tf32Guard {
 public:
  explicit Tf32Guard(bool allow) : saved_(at::globalContext().allowTF32CuBLAS()) {
    at::globalContext().setAllowTF32CuBLAS(allow);
  }
  ~Tf32Guard() { at::globalContext().setAllowTF32CuBLAS(saved_); }
  Tf32Guard(const Tf32Guard&) = delete;
  Tf32Guard& operator=(const Tf32Guard&) = delete;

 private:
  bool saved_;
};

}  // namespace gptbench
