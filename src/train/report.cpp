#include "train/report.h"

#include <cmath>
#include <cstdio>

namespace dptrain::train {

std::string three_significant(double x) {
  if (!std::isfinite(x)) return std::to_string(x);
  if (x == 0) return "0.00";
  char buffer[64];
  int decimals = std::max(0, 2 - static_cast<int>(std::floor(std::log10(std::fabs(x)))));
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, x);
  // Rounding can add a digit (9.996 -> "10.00"); one decimal fewer then keeps three.
  const double rounded = std::atof(buffer);
  if (decimals > 0 &&
      std::floor(std::log10(std::fabs(rounded))) > std::floor(std::log10(std::fabs(x)))) {
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals - 1, x);
  }
  return buffer;
}

std::string format_epoch_line(const run::EpochMetrics& m, int64_t epochs) {
  char val[64] = "";
  if (m.has_val)
    std::snprintf(val, sizeof val, "  val loss %.4f  val acc %.4f", m.val_loss, m.val_acc);
  char buffer[320];
  std::snprintf(
      buffer, sizeof buffer,
      "epoch %lld/%lld  train loss %.4f  train acc %.4f%s  test loss %.4f  test acc %.4f  "
      "train %ss  eval %ss  %.0f samples/s",
      static_cast<long long>(m.epoch), static_cast<long long>(epochs), m.train_loss, m.train_acc,
      val, m.test_loss, m.test_acc, three_significant(m.train_sec).c_str(),
      three_significant(m.eval_sec).c_str(), m.samples_per_sec());
  return buffer;
}

std::string format_summary_line(double test_acc, double sec_per_epoch, const std::string& devices) {
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "test acc: %.2f, %s sec/epoch on %s", test_acc,
                three_significant(sec_per_epoch).c_str(), devices.c_str());
  return buffer;
}

}  // namespace dptrain::train
