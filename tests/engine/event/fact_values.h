// Test helpers over the process facts table (engine/event/process_facts.h):
// every fact of a struct set to a value of its own, and every fact as text,
// walked through the struct's fields() list, so that a fact added to the
// table is covered by the tests that use them without a line here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace vigil::testing {

// Sets each field fields() visits to a value no other field holds and that is
// not its default: true, 1, 2, 3... (numbers), "v_<name>" (strings),
// {"a_<name>", "b_<name>"} (lists).
struct FillFacts {
  int next = 1;
  void appended() {}
  void revision(int) {}
  template <class V>
  void operator()(const char* name, V& v, unsigned = 0) {
    if constexpr (std::is_same_v<V, bool>) {
      v = true;
    } else if constexpr (std::is_integral_v<V>) {
      v = static_cast<V>(next++);
    } else if constexpr (std::is_same_v<V, std::string>) {
      v = std::string("v_") + name;
    } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
      v = {std::string("a_") + name, std::string("b_") + name};
    } else {
      static_assert(sizeof(V) == 0, "FillFacts: a fact of a type it does not know");
    }
  }
};

template <class T>
void fill_facts(T& obj) {
  FillFacts f;
  T::fields(f, obj);
}

// Each field as text, by name (a list's items joined by '|').
struct FactsText {
  std::map<std::string, std::string>& out;
  void appended() {}
  void revision(int) {}
  template <class V>
  void operator()(const char* name, const V& v, unsigned = 0) {
    std::string s;
    if constexpr (std::is_same_v<V, bool>) {
      s = v ? "true" : "false";
    } else if constexpr (std::is_integral_v<V>) {
      s = std::to_string(static_cast<std::conditional_t<std::is_signed_v<V>, std::int64_t, std::uint64_t>>(v));
    } else if constexpr (std::is_same_v<V, std::string>) {
      s = v;
    } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
      for (const auto& x : v) s += (s.empty() ? "" : "|") + x;
    } else {
      static_assert(sizeof(V) == 0, "FactsText: a fact of a type it does not know");
    }
    out[name] = s;
  }
};

template <class T>
std::map<std::string, std::string> facts_text(const T& obj) {
  std::map<std::string, std::string> m;
  FactsText t{m};
  T::fields(t, obj);
  return m;
}

}  // namespace vigil::testing
