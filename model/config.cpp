#include "model/config.h"

#include <cstring>
#include <stdexcept>

#include "fixtures/whole_number.h"
#include "model/size_limits.h"

namespace gptbench {
namespace {

GPT2Config preset(const char* name, int64_t d, int64_t layers, int64_t heads) {
  GPT2Config c;
  c.name = name;
  c.d_model = d;
  c.d_ff = 4 * d;
  c.n_layer = layers;
  c.n_head = heads;
  return c;
}

const std::vector<GPT2Config>& presets() {
  static const std::vector<GPT2Config> kPresets = {
      preset("small", 768, 12, 12),  preset("medium", 1024, 24, 16), preset("large", 1280, 36, 20),
      preset("xl", 1600, 48, 25),    preset("2.7B", 2560, 32, 32),
  };
  return kPresets;
}

std::string valid_names() {
  std::string s;
  for (const auto& p : presets()) s += p.name + ", ";
  return s + "tiny, custom:L=<layers>:d=<d_model>:h=<heads>[:ff=..][:V=..][:T=..]";
}

// Fields are separated by ':' so that a custom model survives --gptbench_models' split at
// commas; ',' (the older form) is accepted too. The name is rewritten with ':' in a fixed field
// order, so both spellings give the same benchmark names.
GPT2Config parse_custom(const std::string& name) {
  GPT2Config c;
  c.d_ff = -1;
  struct Field {
    const char* key;
    int64_t* value;
    bool given;
  };
  Field fields[] = {{"L", &c.n_layer, false}, {"d", &c.d_model, false}, {"h", &c.n_head, false},
                    {"ff", &c.d_ff, false},   {"V", &c.vocab, false},   {"T", &c.n_ctx, false}};
  const std::string spec = name.substr(7);
  for (size_t start = 0; start < spec.size();) {
    size_t end = spec.find_first_of(":,", start);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(start, end - start);
    start = end + 1;
    const size_t eq = item.find('=');
    Field* field = nullptr;
    for (Field& f : fields)
      if (item.compare(0, eq, f.key) == 0 && eq == std::strlen(f.key)) field = &f;
    if (eq == std::string::npos || field == nullptr)
      throw std::invalid_argument("bad custom model field '" + item + "' in '" + name +
                                  "'; expected " + valid_names());
    if (auto err = whole_number_error(item.substr(eq + 1), 1, kMaxDimension, field->value); !err.empty())
      throw std::invalid_argument("custom model '" + name + "': field " + field->key + " " + err);
    field->given = true;
  }
  if (c.d_ff < 0) c.d_ff = 4 * c.d_model;
  if (c.d_model % c.n_head != 0)
    throw std::invalid_argument("custom model '" + name + "': d must be a multiple of h");
  c.name = "custom";
  for (const Field& f : fields)
    if (f.given) c.name += std::string(":") + f.key + "=" + std::to_string(*f.value);
  return c;
}

// Exact in int64_t; in double for sizes whose count would overflow it (model/size_limits.h).
template <typename N>
N count_params(const GPT2Config& c) {
  const N d = static_cast<N>(c.d_model), ff = static_cast<N>(c.d_ff);
  const N ln = 2 * d;                                  // LayerNorm weight + bias
  const N attn = d * 3 * d + 3 * d + d * d + d;        // c_attn + c_proj
  const N mlp = d * ff + ff + ff * d + d;
  const N block = 2 * ln + attn + mlp;
  return static_cast<N>(c.vocab) * d + static_cast<N>(c.n_ctx) * d +
         static_cast<N>(c.n_layer) * block + ln;       // wte + wpe + blocks + ln_f
}

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> n;
    for (const auto& p : presets()) n.push_back(p.name);
    return n;
  }();
  return kNames;
}

GPT2Config cpu_tiny_config() {
  GPT2Config c = parse_custom("custom:L=2:d=128:h=4:V=1024:T=128");
  c.name = "tiny";
  return c;
}

GPT2Config model_config(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p;
  if (name == "tiny") return cpu_tiny_config();
  if (name.rfind("custom:", 0) == 0) return parse_custom(name);
  throw std::invalid_argument("unknown model size '" + name + "'; valid: " + valid_names());
}

int64_t param_count(const GPT2Config& c) { return count_params<int64_t>(c); }

double param_count_approx(const GPT2Config& c) { return count_params<double>(c); }

}  // namespace gptbench
