// The sync study (train/overheads.h): training steps back to back, one synchronisation at the
// end, with or without reading the loss on the host after every step.
#include <chrono>
#include <cmath>

#include "fixtures/timer.h"
#include "train/overheads.h"

namespace gptbench {
namespace {

using Clock = std::chrono::steady_clock;

struct SyncState {
  std::unique_ptr<TrainStep> ts;
  std::unique_ptr<LiveCounters> live;
  int steps = 10;
  double first_loss = std::nan("");
  double host_s = 0;
  int64_t calls = 0;
};

}  // namespace

Case make_sync_case(const SyncCase& o, c10::Device device) {
  auto st = std::make_shared<SyncState>();
  TrainConfig cfg = o.cfg;
  cfg.sync_at_end = false;
  cfg.item_each_step = o.item;
  st->steps = o.steps;
  st->ts = std::make_unique<TrainStep>(cfg, device);
  st->ts->step();
  st->first_loss = st->ts->last_loss();
  for (int i = 0; i < 3; ++i) st->ts->step();
  sync_device(device);
  Case c;
  st->live = std::make_unique<LiveCounters>(c.counters,
                                            std::vector<std::string>{"step_ms", "tokens/s", "steps_per_call"});
  st->live->set("steps_per_call", o.steps);
  c.run = [st, device] {
    const auto t0 = Clock::now();
    for (int i = 0; i < st->steps; ++i) st->ts->step();
    sync_device(device);
    st->host_s += seconds_since(t0);
    st->calls += 1;
    const double step_s = st->host_s / static_cast<double>(st->calls * st->steps);
    st->live->set("step_ms", 1e3 * step_s);
    st->live->set("tokens/s", static_cast<double>(st->ts->config().tokens_per_step()) / step_s);
  };
  c.verify = [st]() -> std::string {
    const double expected = std::log(static_cast<double>(st->ts->config().model.vocab));
    if (!(std::fabs(st->first_loss - expected) < 0.5))
      return "first-step loss " + std::to_string(st->first_loss) + ", expected ≈ ln(V)";
    return "";
  };
  c.cost = {o.steps * cfg.flops_per_step(), 0, PeakKind::kGemmBf16};
  return c;
}

}  // namespace gptbench
