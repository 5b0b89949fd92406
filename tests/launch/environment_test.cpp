#include "launch/environment.h"

#include <map>
#include "support/catch.h"

#include "core/error.h"
#include "launch/nodelist.h"

namespace {

using dptrain::core::Error;
using dptrain::launch::detect_launcher;
using dptrain::launch::RankInfo;

dptrain::launch::EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::string error_of(std::map<std::string, std::string> vars) {
  try {
    detect_launcher(env_of(std::move(vars)));
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("no launcher variables means no launcher", "[dist]") {
  CHECK_FALSE(detect_launcher(env_of({{"HOME", "/root"}})).has_value());
}

TEST_CASE("torchrun's variables give rank, world, local rank and master", "[dist]") {
  const auto info = detect_launcher(env_of({{"RANK", "3"},
                                            {"WORLD_SIZE", "4"},
                                            {"LOCAL_RANK", "1"},
                                            {"LOCAL_WORLD_SIZE", "2"},
                                            {"GROUP_RANK", "1"},
                                            {"MASTER_ADDR", "node7"},
                                            {"MASTER_PORT", "29400"},
                                            {"TORCHELASTIC_USE_AGENT_STORE", "True"}}));
  REQUIRE(info.has_value());
  CHECK(info->launcher == "torchrun");
  CHECK(info->rank == 3);
  CHECK(info->world_size == 4);
  CHECK(info->local_rank == 1);
  CHECK(info->local_world_size == 2);
  CHECK(info->node_rank == 1);
  CHECK(info->master_addr == "node7");
  CHECK(info->master_port == 29400);
  CHECK(info->store_served_by_launcher);
  CHECK(dptrain::launch::describe(*info) == "rank 3 of 4 (node 1, local rank 1) from torchrun");
}

TEST_CASE("a restarted rank knows its restart count from torchrun, dptrain or SLURM", "[dist]") {
  const std::map<std::string, std::string> torchrun = {
      {"RANK", "1"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29400"}};
  auto with = [&](std::map<std::string, std::string> vars, const std::string& name,
                  const std::string& value) {
    vars[name] = value;
    return detect_launcher(env_of(vars));
  };
  CHECK(detect_launcher(env_of(torchrun))->restart_count == 0);
  const auto restarted = with(torchrun, "TORCHELASTIC_RESTART_COUNT", "2");
  CHECK(restarted->restart_count == 2);
  CHECK(dptrain::launch::describe(*restarted) ==
        "rank 1 of 2 (node 0, local rank 1) from torchrun, restart 2");
  CHECK(with(torchrun, "DPTRAIN_RESTART_COUNT", "3")->restart_count == 3);
  CHECK(error_of({{"RANK", "0"},
                  {"WORLD_SIZE", "1"},
                  {"MASTER_ADDR", "a"},
                  {"MASTER_PORT", "1"},
                  {"TORCHELASTIC_RESTART_COUNT", "-1"}})
            .find("TORCHELASTIC_RESTART_COUNT") != std::string::npos);
  const auto slurm = detect_launcher(env_of({{"SLURM_PROCID", "0"},
                                             {"SLURM_STEP_ID", "0"},
                                             {"SLURM_NTASKS", "1"},
                                             {"SLURM_NODELIST", "n1"},
                                             {"SLURM_JOB_ID", "7"},
                                             {"SLURM_RESTART_COUNT", "1"}}));
  CHECK(slurm->restart_count == 1);
}

TEST_CASE("torchrun's bad values are errors naming the variable", "[dist]") {
  const std::map<std::string, std::string> good = {
      {"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29500"}};
  auto with = [&](const std::string& name, const std::string& value) {
    auto vars = good;
    vars[name] = value;
    return vars;
  };
  auto without = [&](const std::string& name) {
    auto vars = good;
    vars.erase(name);
    return vars;
  };
  CHECK(error_of(with("WORLD_SIZE", "0")) ==
        "torchrun: WORLD_SIZE=0 is out of range: must be 1 to 1048576");
  CHECK(error_of(with("RANK", "2")) == "torchrun: RANK=2 is not below WORLD_SIZE=2");
  CHECK(error_of(with("RANK", "-1")) == "torchrun: RANK=-1 is out of range: must be 0 to 1048576");
  CHECK(error_of(with("RANK", "one")) == "torchrun: RANK=\"one\" is not a whole number");
  CHECK(error_of(with("RANK", "1x")) == "torchrun: RANK=\"1x\" is not a whole number");
  CHECK(error_of(with("MASTER_PORT", "70000")) ==
        "torchrun: MASTER_PORT=70000 is out of range: must be 1 to 65535");
  CHECK(error_of(without("MASTER_ADDR")) == "torchrun: MASTER_ADDR is not set");
  CHECK(error_of(without("WORLD_SIZE")) == "torchrun: WORLD_SIZE is not set");
  CHECK(error_of(with("LOCAL_RANK", "2")) ==
        "torchrun: local rank 2 is not below the 2 ranks of its node");
}

TEST_CASE("SLURM inside an srun step: ranks from SLURM_*, master from the node list", "[dist]") {
  const auto info = detect_launcher(env_of({{"SLURM_PROCID", "5"},
                                            {"SLURM_NTASKS", "8"},
                                            {"SLURM_LOCALID", "1"},
                                            {"SLURM_NODEID", "2"},
                                            {"SLURM_STEP_ID", "0"},
                                            {"SLURM_TASKS_PER_NODE", "2(x4)"},
                                            {"SLURM_JOB_NODELIST", "gpu[03-05,07],cpu01"},
                                            {"SLURM_JOB_ID", "123456"}}));
  REQUIRE(info.has_value());
  CHECK(info->launcher == "slurm");
  CHECK(info->rank == 5);
  CHECK(info->world_size == 8);
  CHECK(info->local_rank == 1);
  CHECK(info->local_world_size == 2);
  CHECK(info->node_rank == 2);
  CHECK(info->master_addr == "gpu03");
  CHECK(info->master_port == 15000 + 123456 % 14000);
  CHECK_FALSE(info->store_served_by_launcher);
}

TEST_CASE("SLURM: MASTER_ADDR and MASTER_PORT win over the derived ones", "[dist]") {
  const auto info = detect_launcher(env_of({{"SLURM_PROCID", "0"},
                                            {"SLURM_NTASKS", "2"},
                                            {"SLURM_STEPID", "1"},
                                            {"SLURM_JOB_NODELIST", "a,b"},
                                            {"SLURM_JOB_ID", "7"},
                                            {"MASTER_ADDR", "10.0.0.9"},
                                            {"MASTER_PORT", "23456"}}));
  REQUIRE(info.has_value());
  CHECK(info->master_addr == "10.0.0.9");
  CHECK(info->master_port == 23456);
}

TEST_CASE("SLURM's variables outside an srun step are not a launch", "[dist]") {
  // The batch script itself has SLURM_PROCID=0 and the job's task count: waiting there for the
  // other ranks would hang.
  CHECK_FALSE(detect_launcher(env_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "4"}})));
}

TEST_CASE("torchrun's variables win over SLURM's when torchrun runs inside srun", "[dist]") {
  const auto info = detect_launcher(env_of({{"RANK", "1"},
                                            {"WORLD_SIZE", "2"},
                                            {"MASTER_ADDR", "h"},
                                            {"MASTER_PORT", "1234"},
                                            {"SLURM_PROCID", "0"},
                                            {"SLURM_NTASKS", "1"},
                                            {"SLURM_STEP_ID", "0"}}));
  REQUIRE(info.has_value());
  CHECK(info->launcher == "torchrun");
  CHECK(info->rank == 1);
}

TEST_CASE("Open MPI: ranks from OMPI_COMM_WORLD_*, the loopback on one node", "[dist]") {
  const auto one_node = detect_launcher(env_of({{"OMPI_COMM_WORLD_RANK", "1"},
                                                {"OMPI_COMM_WORLD_SIZE", "2"},
                                                {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}));
  REQUIRE(one_node.has_value());
  CHECK(one_node->launcher == "mpirun");
  CHECK(one_node->rank == 1);
  CHECK(one_node->world_size == 2);
  CHECK(one_node->local_rank == 1);
  CHECK(one_node->master_addr == "127.0.0.1");
  CHECK(one_node->master_port == 29500);

  CHECK(error_of({{"OMPI_COMM_WORLD_RANK", "3"},
                  {"OMPI_COMM_WORLD_SIZE", "4"},
                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}}) == "mpirun: MASTER_ADDR is not set");
  CHECK(error_of({{"OMPI_COMM_WORLD_RANK", "4"}, {"OMPI_COMM_WORLD_SIZE", "4"}}) ==
        "mpirun: OMPI_COMM_WORLD_RANK=4 is not below OMPI_COMM_WORLD_SIZE=4");
}

TEST_CASE("SLURM node lists expand, brackets, ranges and padding included", "[dist]") {
  using dptrain::launch::expand_nodelist;
  using V = std::vector<std::string>;
  CHECK(expand_nodelist("node1") == V{"node1"});
  CHECK(expand_nodelist("a,b") == V{"a", "b"});
  CHECK(expand_nodelist("gpu[03-05,07],cpu01") == V{"gpu03", "gpu04", "gpu05", "gpu07", "cpu01"});
  CHECK(expand_nodelist("n[8-11]") == V{"n8", "n9", "n10", "n11"});
  CHECK(expand_nodelist("rack1-n[001-002],x[5]") == V{"rack1-n001", "rack1-n002", "x5"});
  CHECK_THROWS_WITH(expand_nodelist("gpu[03-05"),
                    "SLURM_JOB_NODELIST=\"gpu[03-05\" is not a list SLURM writes: brackets in "
                    "\"gpu[03-05\" do not close at its end");
  CHECK_THROWS_WITH(expand_nodelist("gpu[5-3]"),
                    "SLURM_JOB_NODELIST=\"gpu[5-3]\" is not a list SLURM writes: the range "
                    "\"5-3\" runs backwards");
  // Numbers too large to be hosts are an error of their own, not an overflow or a huge list.
  CHECK_THROWS_WITH(expand_nodelist("n[99999999999999999999]"),
                    "SLURM_JOB_NODELIST=\"n[99999999999999999999]\" is not a list SLURM writes: "
                    "\"99999999999999999999\" is more than 100000");
  CHECK_THROWS_WITH(expand_nodelist("n[0-100001]"),
                    "SLURM_JOB_NODELIST=\"n[0-100001]\" is not a list SLURM writes: \"100001\" is "
                    "more than 100000");
  CHECK(expand_nodelist("n[0000007]") == V{"n0000007"});
  CHECK_THROWS_WITH(expand_nodelist("gpu[a-b]"),
                    "SLURM_JOB_NODELIST=\"gpu[a-b]\" is not a list SLURM writes: \"a-b\" is not "
                    "a number or a range");
}

TEST_CASE("SLURM task counts per node expand", "[dist]") {
  using dptrain::launch::expand_tasks_per_node;
  CHECK(expand_tasks_per_node("2(x3),1") == std::vector<int>{2, 2, 2, 1});
  CHECK(expand_tasks_per_node("4") == std::vector<int>{4});
  CHECK_THROWS_AS(expand_tasks_per_node("2(x"), Error);
  CHECK_THROWS_WITH(expand_tasks_per_node("1(x2000000000)"),
                    "SLURM_TASKS_PER_NODE=\"1(x2000000000)\" is not a list SLURM writes: "
                    "\"2000000000\" is more than 100000");
  CHECK_THROWS_AS(expand_tasks_per_node("99999999999999999999"), Error);
}
