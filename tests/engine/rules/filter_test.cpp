// rules::Filter: one compiled condition (capture and replay --filter).
#include "engine/rules/filter.h"

#include <gtest/gtest.h>

#include "engine/state/state.h"

namespace vigil::rules {
namespace {

class FilterTest : public ::testing::Test {
 protected:
  FilterTest() : st_(state::Config{.live = false}) {
    state::Process p;
    p.pid = 42;
    p.ppid = 1;
    p.comm = "xmrig";
    p.exe = "/tmp/xmrig";
    p.exepath = "/tmp/xmrig";
    p.args = {"-o", "pool:3333"};
    st_.upsert_process(p);
  }

  bool accepts(const Filter& f, event::Event ev) {
    st_.apply(ev);
    const bool ok = f.accepts(st_.enrich(ev));
    st_.after(ev);
    return ok;
  }

  static event::Event open_event(std::uint32_t pid, std::string path) {
    event::Event ev;
    ev.hdr.type = event::Type::kOpen;
    ev.hdr.pid = ev.hdr.tid = pid;
    ev.hdr.comm = "xmrig";
    event::OpenData o;
    o.path = std::move(path);
    ev.data = std::move(o);
    return ev;
  }

  state::State st_;
};

TEST_F(FilterTest, AcceptsExactlyWhatTheConditionSays) {
  auto f = Filter::compile("evt.type in (open, openat) and proc.name = xmrig and fd.name startswith /dev/nvidia");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_TRUE(accepts(**f, open_event(42, "/dev/nvidia0")));
  EXPECT_FALSE(accepts(**f, open_event(42, "/etc/passwd")));
  event::Event other = open_event(43, "/dev/nvidia0");
  other.hdr.comm = "python3";
  EXPECT_FALSE(accepts(**f, std::move(other)));

  event::Event exec;
  exec.hdr.type = event::Type::kExec;
  exec.hdr.pid = exec.hdr.tid = 42;
  exec.data = event::ExecData{};
  EXPECT_FALSE(accepts(**f, std::move(exec)));
}

TEST_F(FilterTest, KnowsTheEventTypesAndPathsTheSensorNeeds) {
  auto f = Filter::compile("evt.type = openat and fd.name startswith /dev/nvidia");
  ASSERT_TRUE(f) << f.error().message;
  EXPECT_EQ((*f)->event_types(), (std::set<event::Type>{event::Type::kOpen}));
  EXPECT_EQ((*f)->open_paths().prefixes, (std::vector<std::string>{"/dev/nvidia"}));
  EXPECT_TRUE((*f)->open_paths().whole.empty());

  auto any = Filter::compile("proc.name = xmrig");
  ASSERT_TRUE(any);
  EXPECT_GT((*any)->event_types().size(), 10u);  // every type with a process
  EXPECT_EQ((*any)->condition(), "proc.name = xmrig");
}

TEST_F(FilterTest, ErrorsNameTheColumnOrTheField) {
  auto syntax = Filter::compile("proc.name = = xmrig");
  ASSERT_FALSE(syntax);
  EXPECT_EQ(syntax.error().kind, Error::Kind::kBadInput);
  EXPECT_NE(syntax.error().message.find("column 13"), std::string::npos) << syntax.error().message;

  auto unknown = Filter::compile("proc.nmae = xmrig");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.error().message.find("'proc.nmae'"), std::string::npos) << unknown.error().message;

  auto type = Filter::compile("proc.pid = abc");
  ASSERT_FALSE(type);
  EXPECT_NE(type.error().message.find("column"), std::string::npos) << type.error().message;

  EXPECT_FALSE(Filter::compile("  "));
  EXPECT_FALSE(Filter::compile("spawned_process"));  // a macro of a rules file: unknown here
}

}  // namespace
}  // namespace vigil::rules
