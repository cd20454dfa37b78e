#pragma once
// Test-only CUDA fault for bench/fault.cpp (--gptbench_fault=illegal_address).

namespace gptbench {

// Launches one thread that writes through an unmapped device address, then synchronizes:
// throws CudaError ("an illegal memory access was encountered"). The error is sticky: every
// later CUDA call in the process fails, which is what gptbench-run's family isolation is for.
void launch_illegal_write();

}  // namespace gptbench
