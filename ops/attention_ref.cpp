#include "ops/attention_ref.h"

#include "ops/attention/flash.h"

#include <ATen/Context.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

namespace gptbench {

const std::vector<std::string>& attn_backend_names() {
  static const std::vector<std::string> kNames = {"naive", "sdpa_math", "sdpa_efficient",
                                                  "sdpa_flash", "sdpa_cudnn", "flash",
                                                  "flash_sm90"};
  return kNames;
}

AttnBackend parse_attn_backend(const std::string& name) {
  const auto& names = attn_backend_names();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<AttnBackend>(i);
  std::string valid;
  for (const auto& n : names) valid += (valid.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown attention backend '" + name + "'; valid: " + valid);
}

const char* attn_backend_name(AttnBackend backend) {
  return attn_backend_names()[static_cast<size_t>(backend)].c_str();
}

bool attn_backend_takes(AttnBackend backend, at::ScalarType dtype, bool cuda) {
  const bool half = dtype == at::kBFloat16 || dtype == at::kHalf;
  switch (backend) {
    case AttnBackend::kSdpaFlash:
      return half || !cuda;
    case AttnBackend::kSdpaCudnn:
    case AttnBackend::kFlash:
    case AttnBackend::kFlashSm90:
      return half;
    default:
      return true;
  }
}

SdpBackendGuard::SdpBackendGuard(AttnBackend backend) {
  auto& ctx = at::globalContext();
  flash_ = ctx.userEnabledFlashSDP();
  mem_efficient_ = ctx.userEnabledMemEfficientSDP();
  math_ = ctx.userEnabledMathSDP();
  cudnn_ = ctx.userEnabledCuDNNSDP();
  const bool all = backend == AttnBackend::kNaive || backend == AttnBackend::kFlash ||
                   backend == AttnBackend::kFlashSm90;
  ctx.setSDPUseFlash(all || backend == AttnBackend::kSdpaFlash);
  ctx.setSDPUseMemEfficient(all || backend == AttnBackend::kSdpaEfficient);
  ctx.setSDPUseMath(all || backend == AttnBackend::kSdpaMath);
  ctx.setSDPUseCuDNN(all || backend == AttnBackend::kSdpaCudnn);
}

SdpBackendGuard::~SdpBackendGuard() {
  auto& ctx = at::globalContext();
  ctx.setSDPUseFlash(flash_);
  ctx.setSDPUseMemEfficient(mem_efficient_);
  ctx.setSDPUseMath(math_);
  ctx.setSDPUseCuDNN(cudnn_);
}

namespace {

at::Tensor naive_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                           bool causal) {
  const int64_t L = q.size(-2), S = k.size(-2);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  auto att = at::matmul(q, k.transpose(-2, -1)) * scale;  // (B, H, L, S)
  if (causal) {
    auto mask = at::ones({L, S}, q.options().dtype(at::kBool)).triu(1);  // (L, S)
    att = att.masked_fill(mask, -std::numeric_limits<double>::infinity());
  }
  att = at::softmax(att, -1);
  return at::matmul(att, v);  // (B, H, L, d)
}

}  // namespace

at::Tensor attention_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                             bool causal, AttnBackend backend) {
  if (backend == AttnBackend::kNaive) return naive_attention(q, k, v, causal);
  if (backend == AttnBackend::kFlash)
    return flash_attention(q, k, v, causal, FlashKernel::kPortable);
  if (backend == AttnBackend::kFlashSm90)
    return flash_attention(q, k, v, causal, FlashKernel::kSm90);
  SdpBackendGuard guard(backend);
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, causal);
}

at::Tensor attention_reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                               bool causal) {
  auto to64 = [](const at::Tensor& t) { return t.detach().to(at::kCPU, at::kDouble); };
  return naive_attention(to64(q), to64(k), to64(v), causal);
}

namespace {

// Collects LibTorch warnings (SDPA explains a rejected backend through TORCH_WARN).
struct CollectWarnings : c10::WarningHandler {
  std::vector<std::string> messages;
  void process(const c10::Warning& w) override { messages.push_back(w.msg()); }
};

std::string first_line(const std::string& s) {
  auto nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

}  // namespace

std::string attention_unsupported_reason(const std::function<void()>& fn) {
  CollectWarnings collect;
  try {
    c10::WarningUtils::WarningHandlerGuard guard(&collect);
    fn();
    return "";
  } catch (const c10::OutOfMemoryError&) {
    throw;
  } catch (const std::exception& e) {
    // SDPA warns "<Backend> kernel not used because:" followed by the reasons, then throws
    // "No available kernel". Keep the reasons.
    std::string why;
    for (const auto& m : collect.messages) {
      const std::string line = first_line(m);
      if (line.empty() || line.find("not used because") != std::string::npos) continue;
      why += (why.empty() ? "" : "; ") + line;
    }
    if (why.empty()) why = first_line(e.what());
    if (why.size() > 240) why = why.substr(0, 237) + "...";
    return why;
  }
}

}  // namespace gptbench
