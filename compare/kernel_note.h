// Kernels that differ between the two sides of a comparison. A row run with
// --gptbench_kernels=true carries the kernels one call of its case launched, as its label
// (runjson/kernels_label.h), recorded in every process. cuBLAS, cuBLASLt and cuDNN pick kernels
// by heuristics in each process, so a baseline and a change (or two processes of one binary)
// can time different kernels under one name; the report says which.
#pragma once

#include <string>

#include "pair.h"
#include "report.h"
#include "runjson/run.h"

namespace gptbench::compare {

// "" when neither side recorded kernels, or every process of both sides launched the same ones.
// Otherwise, with the names each list alone holds:
//   "kernels differ: base only A, B; new only C"            the sides' kernels differ
//   "processes differ in kernels: base A | B"               the sides agree in all, but the
//                                                           processes of one side did not
std::string kernel_note(const runjson::Benchmark* base, const runjson::Benchmark* contender);

// Sets the kernel_note of each result of `report` from the pair of the same name.
void add_kernel_notes(Report& report, const Pairing& pairing);

}  // namespace gptbench::compare
