#include "support/catch.h"

#include "run/metrics.h"
#include "train/report.h"

using namespace dptrain::train;
using namespace dptrain::run;

TEST_CASE("seconds are printed with three significant digits, zeros kept", "[train]") {
  CHECK(three_significant(4.1) == "4.10");
  CHECK(three_significant(27.314) == "27.3");
  CHECK(three_significant(123.6) == "124");
  CHECK(three_significant(0.012345) == "0.0123");
  CHECK(three_significant(9.996) == "10.0");
  CHECK(three_significant(0.9996) == "1.00");
}

TEST_CASE("the closing line is d2l's", "[train]") {
  CHECK(format_summary_line(0.8412, 4.1, "[cuda:0, cuda:1]") ==
        "test acc: 0.84, 4.10 sec/epoch on [cuda:0, cuda:1]");
  CHECK(format_summary_line(0.835, 12.345, "[cpu]") == "test acc: 0.83, 12.3 sec/epoch on [cpu]");
}

TEST_CASE("a run's summary takes the last epoch's accuracy and the mean epoch time", "[train]") {
  EpochMetrics a;
  a.test_acc = 0.5;
  a.train_sec = 2;
  a.eval_sec = 1;
  a.train_samples = 100;
  EpochMetrics b = a;
  b.test_acc = 0.7;
  b.train_sec = 4;
  const RunSummary s = summarize({a, b});
  CHECK(s.test_acc == 0.7);
  CHECK(s.sec_per_epoch == 3.0);
  CHECK(s.eval_sec_per_epoch == 1.0);
  CHECK(s.samples_per_sec == Approx(200.0 / 6.0));
  CHECK(s.epochs_run == 2);
}
