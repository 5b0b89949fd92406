// Which store each launcher's ranks use, where it listens, and where the secret comes from; and
// the private folder that one machine's rendezvous files live in.
#include "store/plan.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <map>

#include "core/crypto.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "store/rendezvous_file.h"
#include "support/catch.h"
#include "support/fixtures.h"
#include "support/skip.h"

using namespace dptrain;
using store::StorePlan;
using testing::TempDir;

namespace {

const std::string kPlanSecret = "0123456789abcdef0123456789abcdef";

launch::EnvLookup plan_env(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

StorePlan plan_of(std::map<std::string, std::string> vars) {
  const launch::EnvLookup env = plan_env(vars);
  return store::plan_store(*launch::detect_launcher(env), env);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const core::Error& e) {
    return e.what();
  }
  return "no error";
}

std::map<std::string, std::string> slurm(int procid, int nodes, const std::string& runtime) {
  return {{"SLURM_PROCID", std::to_string(procid)},
          {"SLURM_NTASKS", std::to_string(2 * nodes)},
          {"SLURM_NODEID", std::to_string(procid / 2)},
          {"SLURM_LOCALID", std::to_string(procid % 2)},
          {"SLURM_TASKS_PER_NODE", nodes == 1 ? "2" : "2(x2)"},
          {"SLURM_STEP_ID", "0"},
          {"SLURM_JOB_ID", "777"},
          {"SLURM_JOB_NODELIST", nodes == 1 ? "gpu01" : "gpu[01-02]"},
          {"XDG_RUNTIME_DIR", runtime}};
}

}  // namespace

TEST_CASE("a SLURM job on one machine: rank 0 serves on the loopback and publishes it privately",
          "[dist][store][security]") {
  TempDir runtime;
  const StorePlan zero = plan_of(slurm(0, 1, runtime.path()));
  CHECK(zero.kind == StorePlan::Kind::kDptrain);
  CHECK(zero.serve);
  CHECK(zero.bind_address == "127.0.0.1");
  CHECK(zero.port == 0);  // the system picks one: no two jobs collide
  CHECK(zero.rendezvous_file == runtime / "dptrain" / "store-777.0-0");
  CHECK(zero.secret.empty());  // rank 0 makes one
  CHECK(zero.key_prefix == "dptrain/777.0/open/0/");
  const StorePlan one = plan_of(slurm(1, 1, runtime.path()));
  CHECK_FALSE(one.serve);
  CHECK(one.rendezvous_file == zero.rendezvous_file);
  struct stat st {};
  REQUIRE(::stat((runtime / "dptrain").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
}

TEST_CASE("a job across machines needs a secret, then listens at its port with it in the keys",
          "[dist][store][security]") {
  TempDir runtime;
  CHECK(error_of([&] { plan_of(slurm(0, 2, runtime.path())); }) ==
        "rank 0: the ranks of a job across machines must share a secret to reach its rendezvous "
        "store, and DPTRAIN_JOB_SECRET is not set");
  auto vars = slurm(2, 2, runtime.path());
  vars["DPTRAIN_JOB_SECRET"] = "short";
  CHECK(error_of([&] { plan_of(vars); }) ==
        "DPTRAIN_JOB_SECRET holds 5 characters, too few to be a secret (at least 16)");
  vars["DPTRAIN_JOB_SECRET"] = kPlanSecret;
  const StorePlan two = plan_of(vars);
  CHECK(two.kind == StorePlan::Kind::kDptrain);
  CHECK_FALSE(two.serve);
  CHECK(two.host == "gpu01");
  CHECK(two.port == 15000 + 777 % 14000);
  CHECK(two.secret == kPlanSecret);
  CHECK(two.key_prefix ==
        "dptrain/777.0/" +
            core::hex(core::sha256("dptrain key prefix\n" + kPlanSecret)).substr(0, 16) + "/0/");
  vars = slurm(0, 2, runtime.path());
  vars["DPTRAIN_JOB_SECRET"] = kPlanSecret;
  const StorePlan zero = plan_of(vars);
  CHECK(zero.serve);
  CHECK(zero.bind_address.empty());  // every interface: the other machines must reach it
  CHECK(zero.rendezvous_file.empty());
}

TEST_CASE("mpirun's ranks take their job's id from Open MPI, and no secret but the one exported",
          "[dist][store]") {
  TempDir runtime;
  std::map<std::string, std::string> vars = {{"OMPI_COMM_WORLD_RANK", "3"},
                                             {"OMPI_COMM_WORLD_SIZE", "4"},
                                             {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                             {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                                             {"OMPI_MCA_ess_base_jobid", "1114308609"},
                                             {"OMPI_MCA_orte_precondition_transports", "8053-92"},
                                             {"MASTER_ADDR", "node0"},
                                             {"XDG_RUNTIME_DIR", runtime.path()}};
  // Open MPI's transport key is not a secret (its daemons may carry it on command lines).
  CHECK_THAT(error_of([&] { plan_of(vars); }), ContainsSubstring("DPTRAIN_JOB_SECRET is not set"));
  vars["DPTRAIN_JOB_SECRET"] = kPlanSecret;
  const StorePlan plan = plan_of(vars);
  CHECK(plan.port == 15000 + 1114308609 % 14000);  // not a fixed 29500 that two jobs share
  CHECK(plan.key_prefix.rfind("dptrain/1114308609/", 0) == 0);
  // Open MPI 5 names a PMIx namespace instead; one machine's job without any id is told apart
  // by the ranks' parent.
  const StorePlan five = plan_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"PMIX_NAMESPACE", "prterun-node0-4242@1"},
                                  {"XDG_RUNTIME_DIR", runtime.path()}});
  CHECK(five.rendezvous_file.filename() == "store-prterun-node0-4242_1-0");
  const StorePlan bare = plan_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                  {"OMPI_COMM_WORLD_SIZE", "2"},
                                  {"XDG_RUNTIME_DIR", runtime.path()}});
  CHECK(bare.rendezvous_file.filename() == "store-parent-" + std::to_string(::getppid()) + "-0");
}

TEST_CASE("torchrun's agent store is used as it is, dptrain's launcher's with its secret",
          "[dist][store]") {
  const StorePlan agent = plan_of({{"RANK", "1"},
                                   {"WORLD_SIZE", "2"},
                                   {"MASTER_ADDR", "node7"},
                                   {"MASTER_PORT", "29400"},
                                   {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                   {"TORCHELASTIC_RESTART_COUNT", "2"}});
  CHECK(agent.kind == StorePlan::Kind::kTorchrunAgent);
  CHECK(agent.host == "node7");
  CHECK(agent.port == 29400);
  CHECK(agent.key_prefix == "dptrain/none-29400/open/2/");
  const StorePlan ours = plan_of({{"RANK", "0"},
                                  {"WORLD_SIZE", "2"},
                                  {"MASTER_ADDR", "127.0.0.1"},
                                  {"MASTER_PORT", "41000"},
                                  {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                  {"DPTRAIN_LAUNCHER", "dptrain"},
                                  {"DPTRAIN_JOB_ID", "dptrain-41000"},
                                  {"DPTRAIN_JOB_SECRET", kPlanSecret}});
  CHECK(ours.kind == StorePlan::Kind::kDptrain);
  CHECK_FALSE(ours.serve);  // the launcher does
  CHECK(ours.secret == kPlanSecret);
  CHECK(ours.key_prefix.rfind("dptrain/dptrain-41000/", 0) == 0);
  CHECK(plan_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}})
            .kind == StorePlan::Kind::kDptrain);
  // Without the agent's store, a node that joined later (restart count 0) meets one restarted
  // twice: torchrun's port for the round tells generations apart, not the counts.
  for (const char* count : {"0", "2"}) {
    const StorePlan joined = plan_of({{"RANK", "1"},
                                      {"WORLD_SIZE", "2"},
                                      {"LOCAL_RANK", "0"},
                                      {"LOCAL_WORLD_SIZE", "1"},
                                      {"MASTER_ADDR", "node0"},
                                      {"MASTER_PORT", "38349"},
                                      {"TORCHELASTIC_RESTART_COUNT", count},
                                      {"DPTRAIN_JOB_SECRET", kPlanSecret}});
    CHECK(joined.kind == StorePlan::Kind::kDptrain);
    CHECK(joined.key_prefix.rfind("dptrain/none-38349/", 0) == 0);
    CHECK(joined.key_prefix.substr(joined.key_prefix.size() - 3) == "/0/");
  }
  CHECK(store::plan_store(launch::RankInfo{}, plan_env({})).kind == StorePlan::Kind::kInProcess);
}

TEST_CASE("the private runtime folder and its files are refused when anyone else could plant them",
          "[dist][store][security]") {
  TempDir runtime;
  const auto env = plan_env({{"XDG_RUNTIME_DIR", runtime.path()}});
  const auto dir = runtime / "dptrain";
  SECTION("a link planted where the folder goes") {
    std::filesystem::create_directory(runtime / "elsewhere");
    std::filesystem::create_directory_symlink(runtime / "elsewhere", dir);
    CHECK_THAT(error_of([&] { store::private_runtime_dir(env); }),
               ContainsSubstring("dptrain: is not a folder but a link or file"));
  }
  SECTION("a folder open to others") {
    std::filesystem::create_directory(dir);
    ::chmod(dir.c_str(), 0755);
    CHECK_THAT(error_of([&] { store::private_runtime_dir(env); }),
               ContainsSubstring("belongs to another user or is open to others"));
  }
  SECTION("a file someone else could read or wrote") {
    const auto folder = store::private_runtime_dir(env);
    const auto file = store::rendezvous_file(folder, "job/../x");
    CHECK(file == folder / "store-job_.._x");
    store::publish(file, {4242, kPlanSecret});
    std::string why;
    const auto read = store::read_published(file, why);
    REQUIRE(read.has_value());
    CHECK(read->port == 4242);
    CHECK(read->secret == kPlanSecret);
    ::chmod(file.c_str(), 0644);
    CHECK_FALSE(store::read_published(file, why));
    CHECK_THAT(why, ContainsSubstring("not a private file of this user"));
  }
}

TEST_CASE(
    "a /tmp/dptrain-<uid> that another user made first sends the rendezvous files home, where "
    "nobody else can plant one",
    "[dist][store][security]") {
  if (::geteuid() != 0) DPTRAIN_SKIP("needs root, to give a folder to another user (CI is root)");
  TempDir tmp, home;
  const auto env = plan_env({{"TMPDIR", tmp.path()}, {"HOME", home.path()}});
  const auto shared = tmp / ("dptrain-" + std::to_string(::geteuid()));
  // Unclaimed, it is made and used.
  CHECK(store::private_runtime_dir(env) == shared);
  std::filesystem::remove(shared);
  // Made first by another user (anyone may, in /tmp): every rank goes home instead.
  std::filesystem::create_directory(shared);
  REQUIRE(::chown(shared.c_str(), 65534, 65534) == 0);
  const auto folder = store::private_runtime_dir(env);
  CHECK(folder == home / ".cache" / "dptrain");
  struct stat st {};
  REQUIRE(::stat(folder.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  CHECK(store::private_runtime_dir(
            plan_env({{"TMPDIR", tmp.path()}, {"XDG_CACHE_HOME", (home / "xdg").string()}})) ==
        home / "xdg" / "dptrain");
  // A link planted there instead: the same.
  std::filesystem::remove(shared);
  std::filesystem::create_directory_symlink(home.path(), shared);
  REQUIRE(::lchown(shared.c_str(), 65534, 65534) == 0);
  CHECK(store::private_runtime_dir(env) == home / ".cache" / "dptrain");
}

TEST_CASE(
    "a rendezvous file that no rank 0 serves any more is removed at the next start, and one "
    "served, or just written, stays",
    "[dist][store]") {
  TempDir runtime;
  const auto folder = store::private_runtime_dir(plan_env({{"XDG_RUNTIME_DIR", runtime.path()}}));
  const auto killed = store::rendezvous_file(folder, "job-7-0");  // its rank 0 SIGKILLed
  const auto served = store::rendezvous_file(folder, "job-8-0");
  const auto fresh = store::rendezvous_file(folder, "job-9-0");  // its lock not yet taken
  for (const auto& f : {killed, served, fresh}) store::publish(f, {4242, kPlanSecret});
  const auto an_hour_ago = std::filesystem::file_time_type::clock::now() - std::chrono::hours(1);
  for (const auto& f : {killed, served}) std::filesystem::last_write_time(f, an_hour_ago);
  const dptrain::core::FileLock serving(served, dptrain::core::FileLock::Mode::kTry);
  REQUIRE(serving.held());

  CHECK(store::remove_abandoned_rendezvous_files(folder) == 1);
  CHECK_FALSE(std::filesystem::exists(killed));
  CHECK(std::filesystem::exists(served));
  CHECK(std::filesystem::exists(fresh));
}
