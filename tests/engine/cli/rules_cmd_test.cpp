// The vigil binary's command line (CLI11): generated --help on every command
// that main.cpp and rules_cmd.cpp parse, exit code 2 and a clear message for
// unknown options, and the outputs and exit codes of `vigil rules ...`,
// `vigil fields` and `vigil version`, which scripts depend on.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/util/version.h"
#include "tests/support/temp_dir.h"

extern char** environ;

namespace vigil::cli {
namespace {

struct Outcome {
  int code = -1;
  std::string out, err;
};

// Runs the vigil binary of this build with args (from the repository root),
// capturing stdout and stderr.
Outcome vigil(const std::vector<std::string>& args) {
  support::TempDir dir("vigil-cli");
  const std::string out = dir.path() + "/out", err = dir.path() + "/err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> all = {VIGIL_BINARY};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  Outcome r;
  pid_t pid = -1;
  if (posix_spawn(&pid, VIGIL_BINARY, &fa, nullptr, argv.data(), environ) != 0) {
    posix_spawn_file_actions_destroy(&fa);
    return r;
  }
  posix_spawn_file_actions_destroy(&fa);
  int status = 0;
  ::waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = support::read_file(out);
  r.err = support::read_file(err);
  return r;
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(Cli, TopLevelHelpListsEveryCommand) {
  for (const char* flag : {"--help", "-h", "help"}) {
    Outcome r = vigil({flag});
    EXPECT_EQ(r.code, 0) << flag << ": " << r.err;
    for (const char* cmd : {"run", "replay", "capture", "rules", "fields", "version"}) {
      EXPECT_TRUE(has(r.out, cmd)) << flag << " does not list " << cmd << ":\n" << r.out;
    }
  }
}

TEST(Cli, NoCommandIsUsageErrorWithHelpOnStderr) {
  Outcome r = vigil({});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(has(r.err, "rules")) << r.err;
}

TEST(Cli, UnknownCommandAndOptionExitTwoNamingThem) {
  Outcome r = vigil({"teleport"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "teleport")) << r.err;
  r = vigil({"--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "--bogus")) << r.err;
  r = vigil({"fields", "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "vigil fields: ")) << r.err;
  EXPECT_TRUE(has(r.err, "--bogus")) << r.err;
  EXPECT_TRUE(has(r.err, "vigil fields --help")) << r.err;
  r = vigil({"rules", "list", "--bogus"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "vigil rules list: ")) << r.err;
  r = vigil({"rules", "teleport"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "teleport")) << r.err;
}

TEST(Cli, VersionBothWays) {
  for (const char* arg : {"version", "--version"}) {
    Outcome r = vigil({arg});
    EXPECT_EQ(r.code, 0) << arg;
    EXPECT_EQ(r.out, std::string("vigil ") + kVersion + "\n") << arg;
  }
}

TEST(Cli, EverySubcommandHasHelp) {
  const std::vector<std::vector<std::string>> cmds = {
      {"rules"}, {"rules", "validate"}, {"rules", "list"}, {"rules", "test"}, {"fields"}};
  for (const auto& cmd : cmds) {
    std::vector<std::string> args = cmd;
    args.push_back("--help");
    Outcome r = vigil(args);
    std::string name = "vigil";
    for (const auto& c : cmd) name += " " + c;
    EXPECT_EQ(r.code, 0) << name << " --help: " << r.err;
    EXPECT_TRUE(has(r.out, "Usage: " + name)) << name << " --help:\n" << r.out;
    EXPECT_TRUE(r.err.empty()) << name << " --help:\n" << r.err;
  }
  // The case the issue names: --help is not a test file.
  Outcome r = vigil({"rules", "test", "--help"});
  EXPECT_FALSE(has(r.out + r.err, "cannot read")) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "FILE|DIR")) << r.out;
}

TEST(Cli, RunReplayAndCaptureGetTheirArgumentsAsGiven) {
  // They parse their own command lines; --help and unknown options reach them.
  for (const char* cmd : {"run", "replay", "capture"}) {
    Outcome r = vigil({cmd, "--help"});
    EXPECT_EQ(r.code, 0) << cmd << ": " << r.err;
    EXPECT_TRUE(has(r.out + r.err, std::string("vigil ") + cmd)) << cmd << ":\n" << r.out << r.err;
    r = vigil({cmd, "--no-such-option"});
    EXPECT_EQ(r.code, 2) << cmd;
    EXPECT_TRUE(has(r.err, "--no-such-option")) << cmd << ":\n" << r.err;
  }
}

TEST(Cli, RulesNeedTheirArguments) {
  for (const char* sub : {"validate", "test"}) {
    Outcome r = vigil({"rules", sub});
    EXPECT_EQ(r.code, 2) << sub;
    EXPECT_TRUE(has(r.err, std::string("vigil rules ") + sub + ": ")) << r.err;
  }
  Outcome r = vigil({"rules"});
  EXPECT_EQ(r.code, 2);
  r = vigil({"rules", "list", "-r"});
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(has(r.err, "-r")) << r.err;
}

TEST(Cli, RulesValidate) {
  Outcome r = vigil({"rules", "validate", "rules"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(has(r.out, "rules: ")) << r.out;
  EXPECT_TRUE(has(r.out, " 0 errors")) << r.out;

  support::TempDir dir;
  const std::string bad = dir.write("bad.yaml",
                                    "- rule: broken\n  desc: d\n  condition: evt.type = (\n"
                                    "  output: o\n  priority: WARNING\n");
  r = vigil({"rules", "validate", bad});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, bad + ":")) << "the diagnostic names the file: " << r.err;
  r = vigil({"rules", "validate", dir.path() + "/none.yaml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, "none.yaml")) << r.err;
}

TEST(Cli, RulesListTextJsonAndRepeatedR) {
  Outcome text = vigil({"rules", "list"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(has(text.out, "  priority: ")) << text.out;
  Outcome j = vigil({"rules", "list", "--json", "-r", "rules"});
  ASSERT_EQ(j.code, 0) << j.err;
  auto arr = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_TRUE(arr.is_array()) << j.out;
  ASSERT_FALSE(arr.empty());
  EXPECT_TRUE(arr[0].contains("event_types"));
  const std::size_t bundled = arr.size();

  // -r is repeatable, one path each time; --rules is its long form.
  j = vigil({"rules", "list", "--json", "-r", "tests/engine/rules/fixtures/mini_rules.yaml", "--rules", "rules"});
  ASSERT_EQ(j.code, 0) << j.err;
  arr = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_TRUE(arr.is_array());
  EXPECT_GT(arr.size(), bundled);
  // Two paths after one -r is a usage error, not a silent second file.
  j = vigil({"rules", "list", "-r", "rules", "tests/engine/rules/fixtures/mini_rules.yaml"});
  EXPECT_EQ(j.code, 2);
}

TEST(Cli, FieldsTextAndJson) {
  Outcome text = vigil({"fields"});
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_TRUE(has(text.out, "proc.name")) << text.out;
  Outcome j = vigil({"fields", "--json"});
  ASSERT_EQ(j.code, 0) << j.err;
  auto arr = nlohmann::json::parse(j.out, nullptr, false);
  ASSERT_TRUE(arr.is_array());
  bool found = false;
  for (const auto& f : arr) found |= f.value("name", "") == "proc.name";
  EXPECT_TRUE(found);
}

TEST(Cli, RulesTestFilesAndDirectories) {
  const std::string fx = "tests/engine/rules/fixtures/";
  Outcome r = vigil({"rules", "test", fx + "mini_test.yaml"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "rule tests: 5 passed, 0 failed")) << r.out;

  r = vigil({"rules", "test", fx + "failing_test.yaml"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(has(r.out, "FAIL " + fx + "failing_test.yaml:4: ")) << r.out;

  r = vigil({"rules", "test", fx + "invalid_test.yaml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, fx + "invalid_test.yaml:7:15: error E003")) << r.err;

  // The bundled tests as a directory: every file, and all pass.
  r = vigil({"rules", "test", "rules/tests"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, " passed, 0 failed")) << r.out;

  // A directory of test files runs them in name order; other files and
  // subdirectories are left alone.
  support::TempDir dir;
  char cwd[4096] = {};
  ASSERT_NE(::getcwd(cwd, sizeof(cwd)), nullptr);
  const std::string abs_rules = std::string(cwd) + "/" + fx + "mini_rules.yaml";
  const std::string one_test =
      "rules: [" + abs_rules +
      "]\ntests:\n"
      "  - name: NAME\n"
      "    process: {pid: 4242, name: bash, exepath: /bin/bash}\n"
      "    container: {id: 3f1c0d2e9a7b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d, name: s, image: i}\n"
      "    pod: {name: serve-0, namespace: inference}\n"
      "    events: [{type: execve}]\n"
      "    expect: {fire: [FIRE]}\n";
  auto test_file = [&](const std::string& name, const std::string& fire) {
    std::string t = one_test;
    t.replace(t.find("NAME"), 4, name);
    t.replace(t.find("FIRE"), 4, fire);
    return t;
  };
  dir.write("b_fails_test.yml", test_file("b", "Other GPU opened"));
  dir.write("a_fails_test.yaml", test_file("a", "Other GPU opened"));
  dir.write("c_passes_test.yaml", test_file("c", "Shell in pod"));
  dir.write("notes.txt", "not a test");
  dir.write("sub/d_fails_test.yaml", test_file("d", "Other GPU opened"));
  r = vigil({"rules", "test", dir.path()});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "rule tests: 1 passed, 2 failed")) << r.out << r.err;
  std::size_t a = r.out.find("a_fails_test.yaml"), b = r.out.find("b_fails_test.yml");
  ASSERT_NE(a, std::string::npos) << r.out;
  ASSERT_NE(b, std::string::npos) << r.out;
  EXPECT_LT(a, b) << "name order: " << r.out;
  EXPECT_FALSE(has(r.out, "d_fails")) << "not recursive: " << r.out;

  // Files and directories mix.
  r = vigil({"rules", "test", fx + "mini_test.yaml", dir.path()});
  EXPECT_TRUE(has(r.out, "rule tests: 6 passed, 2 failed")) << r.out;

  // An empty directory and a missing path are invalid input, named.
  support::TempDir empty;
  empty.write("readme.txt", "no tests");
  r = vigil({"rules", "test", empty.path()});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, empty.path() + ": error E001: no rule test files")) << r.err;
  r = vigil({"rules", "test", dir.path() + "/missing"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(has(r.err, dir.path() + "/missing: error E001: no such file or directory")) << r.err;
}

// A directory that holds a rule file and its tests (the nvml plugin's): each
// command takes its own kind of file from it and does not fail on the other.
TEST(Cli, RulesAndTheirTestsInOneDirectory) {
  Outcome r = vigil({"rules", "test", "plugins/nvml/rules"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, " passed, 0 failed")) << r.out;
  EXPECT_FALSE(has(r.out + r.err, "nvml_rules.yaml:")) << "the rule file is not a test: " << r.out << r.err;
  r = vigil({"rules", "validate", "plugins/nvml/rules"});
  EXPECT_FALSE(has(r.out + r.err, "nvml_rules_test.yaml")) << "the test file is not rules: " << r.out << r.err;
  EXPECT_TRUE(has(r.out + r.err, "0 errors")) << r.out << r.err;
}

}  // namespace
}  // namespace vigil::cli
