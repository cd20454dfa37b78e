#include "model/config.h"

#include <map>
#include <sstream>
#include <stdexcept>

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
  return s + "tiny, custom:L=<layers>,d=<d_model>,h=<heads>[,ff=..][,V=..][,T=..]";
}

GPT2Config parse_custom(const std::string& name) {
  GPT2Config c;
  c.name = name;
  c.d_ff = -1;
  std::map<std::string, int64_t*> fields = {{"L", &c.n_layer}, {"d", &c.d_model},
                                            {"h", &c.n_head},  {"ff", &c.d_ff},
                                            {"V", &c.vocab},   {"T", &c.n_ctx}};
  std::stringstream ss(name.substr(7));
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    auto it = fields.find(item.substr(0, eq));
    if (eq == std::string::npos || it == fields.end())
      throw std::invalid_argument("bad custom model field '" + item + "' in '" + name +
                                  "'; expected " + valid_names());
    size_t used = 0;
    int64_t v = 0;
    try {
      v = std::stoll(item.substr(eq + 1), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size() - eq - 1 || v <= 0)
      throw std::invalid_argument("bad value in custom model field '" + item + "'");
    *it->second = v;
  }
  if (c.d_ff < 0) c.d_ff = 4 * c.d_model;
  if (c.d_model % c.n_head != 0)
    throw std::invalid_argument("custom model '" + name + "': d must be a multiple of h");
  return c;
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
  GPT2Config c = parse_custom("custom:L=2,d=128,h=4,V=1024,T=128");
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

int64_t param_count(const GPT2Config& c) {
  const int64_t d = c.d_model;
  const int64_t ln = 2 * d;                        // LayerNorm weight + bias
  const int64_t attn = d * 3 * d + 3 * d + d * d + d;  // c_attn + c_proj
  const int64_t mlp = d * c.d_ff + c.d_ff + c.d_ff * d + d;
  const int64_t block = 2 * ln + attn + mlp;
  return c.vocab * d + c.n_ctx * d + c.n_layer * block + ln;  // wte + wpe + blocks + ln_f
}

}  // namespace gptbench
