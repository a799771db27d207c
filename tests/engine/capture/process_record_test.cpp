// The process record and the exec payload carry every fact of the process
// facts table (engine/event/process_facts.h): each fact set to a value of its
// own survives a round trip through the codec, compared fact by fact, and a
// record written before a revision reads that revision's facts as defaults.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "engine/capture/codec.h"
#include "engine/capture/format.h"
#include "tests/engine/event/fact_values.h"

namespace vigil::capture {
namespace {

using vigil::testing::facts_text;
using vigil::testing::fill_facts;

// The record's body (after its type byte and length).
std::string body_of(const std::string& record) { return record.substr(5); }

DecodeOutcome decode(RecordType type, std::string_view body, RecordData& out) {
  std::string why;
  DecodeOutcome o = decode_record(static_cast<std::uint8_t>(type), body, out, why);
  if (o == DecodeOutcome::kBad) {
    EXPECT_FALSE(why.empty());
  }
  return o;
}

void expect_same_facts(const std::map<std::string, std::string>& want, const std::map<std::string, std::string>& got) {
  ASSERT_EQ(want.size(), got.size());
  for (const auto& [name, value] : want) {
    auto it = got.find(name);
    ASSERT_NE(it, got.end()) << name;
    EXPECT_EQ(it->second, value) << "fact " << name;
  }
}

TEST(ProcessRecord, EveryFactRoundTrips) {
  state::Process p;
  fill_facts(p);
  std::string rec;
  append_process(p, rec);
  RecordData out;
  ASSERT_EQ(decode(RecordType::kProcess, body_of(rec), out), DecodeOutcome::kOk);
  const auto* q = std::get_if<state::Process>(&out);
  ASSERT_NE(q, nullptr);
  expect_same_facts(facts_text(p), facts_text(*q));
  // The same, through the table's pairs: no fact is left at its default.
  state::Process def;
  event::for_each_process_fact(p, def, [](const char* name, const auto& set, const auto& unset) {
    EXPECT_NE(set, unset) << "fact " << name << " kept its default";
  });
}

TEST(ProcessRecord, ExecPayloadCarriesEveryFact) {
  event::Event ev;
  ev.hdr.type = event::Type::kExec;
  event::ExecData d;
  fill_facts(d);
  ev.data = d;
  std::string rec;
  append_event(ev, rec);
  RecordData out;
  ASSERT_EQ(decode(RecordType::kEvent, body_of(rec), out), DecodeOutcome::kOk);
  const auto* e = std::get_if<event::Event>(&out);
  ASSERT_NE(e, nullptr);
  ASSERT_NE(e->as<event::ExecData>(), nullptr);
  expect_same_facts(facts_text(d), facts_text(*e->as<event::ExecData>()));
}

// The bytes each fact takes in `p`'s record, by revision (index: revision).
struct RevisionSizes {
  std::vector<std::size_t> bytes;
  int rev = 0;
  void revision(int r) {
    rev = r;
    if (bytes.size() <= static_cast<std::size_t>(r)) bytes.resize(static_cast<std::size_t>(r) + 1);
  }
  template <class V>
  void operator()(const char*, const V& v) {
    std::size_t n = 0;
    if constexpr (std::is_same_v<V, std::string>) {
      n = 4 + v.size();
    } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
      n = 4;
      for (const auto& s : v) n += 4 + s.size();
    } else {
      n = sizeof(V);
    }
    bytes[static_cast<std::size_t>(rev)] += n;
  }
};

// The record revision of each fact of the process record, in table order.
const std::vector<int>& record_revisions() {
  static const std::vector<int> revs = [] {
    std::vector<int> v;
    for (const auto& row : event::facts::kRows) {
      if (row.rec >= 0) v.push_back(row.rec);
    }
    return v;
  }();
  return revs;
}

// A record that ends where revision r ends (what a writer of revision r
// wrote) reads the facts of later revisions as their defaults; one that ends
// inside a revision (after its first byte) is malformed.
TEST(ProcessRecord, OlderRevisionsReadLaterFactsAsDefaults) {
  state::Process p;
  fill_facts(p);
  std::string rec;
  append_process(p, rec);
  const std::string body = body_of(rec);
  RevisionSizes sizes;
  state::Process::fields(sizes, p);
  ASSERT_EQ(sizes.bytes.size(), std::size(event::facts::kRevisionSizes));
  std::size_t end = 0;
  for (std::size_t r = 0; r < sizes.bytes.size(); ++r) {
    end += sizes.bytes[r];
    SCOPED_TRACE("revision " + std::to_string(r));
    RecordData out;
    ASSERT_EQ(decode(RecordType::kProcess, std::string_view(body).substr(0, end), out), DecodeOutcome::kOk);
    // Expected: p's facts up to revision r, the defaults after.
    state::Process want = p;
    const state::Process def;
    std::size_t i = 0;
    event::for_each_process_fact(want, def, [&](const char*, auto& w, const auto& d) {
      if (static_cast<std::size_t>(record_revisions()[i++]) > r) w = d;
    });
    expect_same_facts(facts_text(want), facts_text(std::get<state::Process>(out)));
    if (r + 1 < sizes.bytes.size() && sizes.bytes[r + 1] > 1) {
      RecordData cut;
      EXPECT_EQ(decode(RecordType::kProcess, std::string_view(body).substr(0, end + 1), cut), DecodeOutcome::kBad);
    }
  }
  EXPECT_EQ(end, body.size());
}

}  // namespace
}  // namespace vigil::capture
