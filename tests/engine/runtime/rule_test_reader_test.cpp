// The rule-test file reader: a test's process reads every fact of the
// process facts table by its name, and the exec it makes reports them.
#include "engine/runtime/rule_test_reader.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

#include "tests/engine/event/fact_values.h"

namespace vigil::runtime::test_file {
namespace {

// The YAML a test writes for `p`: every fact by its name.
struct ToYaml {
  YAML::Node& out;
  void revision(int) {}
  template <class V>
  void operator()(const char* name, const V& v) {
    if constexpr (std::is_same_v<V, bool> || std::is_same_v<V, std::string> ||
                  std::is_same_v<V, std::vector<std::string>>) {
      out[name] = v;
    } else {
      out[name] = std::to_string(v);  // numbers as text: uint8_t is no char here
    }
  }
};

// A context of only a process, read; a test file's error fails the test.
Built read(const YAML::Node& process) {
  const YAML::Node none = YAML::Load("{}");  // its keys are absent, as in a test without them
  try {
    return build_context(Context{process, none["parents"], none["container"], none["pod"]});
  } catch (const BadTest& b) {
    ADD_FAILURE() << "line " << b.mark.line + 1 << ": " << b.message;
    return {};
  }
}

state::Process every_fact_set() {
  state::Process p;
  vigil::testing::fill_facts(p);
  p.exe_class = 2;  // the reader takes a class by its name
  return p;
}

TEST(RuleTestReader, ProcessReadsEveryFactByItsName) {
  const state::Process want = every_fact_set();
  YAML::Node n;
  ToYaml y{n};
  state::Process::fields(y, want);
  n["exe_class"] = "interpreter";
  Built b = read(n);
  auto got = vigil::testing::facts_text(b.proc);
  for (const auto& [name, value] : vigil::testing::facts_text(want)) EXPECT_EQ(got[name], value) << "fact " << name;
}

TEST(RuleTestReader, TheTestFormatsOwnNames) {
  YAML::Node n = YAML::Load("{pid: 7, name: a-very-long-process-name, is_32bit: true, start_ns: 12, loginuid: -1}");
  Built b = read(n);
  EXPECT_EQ(b.proc.comm, "a-very-long-pro");
  EXPECT_TRUE(b.proc.elf32);
  EXPECT_EQ(b.proc.start_ts_ns, 12u);
  EXPECT_EQ(b.proc.loginuid, 0xffffffffu);
  const YAML::Node none = YAML::Load("{}");
  EXPECT_THROW(build_context(Context{YAML::Load("{pid: 7, no_such_fact: 1}"), none["a"], none["b"], none["c"]}),
               BadTest);
}

TEST(RuleTestReader, ExecReportsTheProcessFacts) {
  const state::Process want = every_fact_set();
  YAML::Node n;
  ToYaml y{n};
  state::Process::fields(y, want);
  n["exe_class"] = "interpreter";
  Built b = read(n);
  event::Event ev = make_event(YAML::Load("{type: execve}"), b, 1000);
  const auto* ed = ev.as<event::ExecData>();
  ASSERT_NE(ed, nullptr);
  event::for_each_exec_fact(b.proc, *ed, [](const auto& kept, const auto& reported) { EXPECT_EQ(kept, reported); });
  EXPECT_EQ(ed->exe, want.exepath);
  EXPECT_EQ(ed->args.front(), want.exe);
}

}  // namespace
}  // namespace vigil::runtime::test_file
