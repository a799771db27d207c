// Exposition: writes metrics in the Prometheus text format (version 0.0.4),
// the format every Prometheus server and agent scrapes.
//
//   metrics::Exposition out;
//   out.family("vigil_events_total", "counter", "Events handed to the rules, by type.");
//   out.sample("vigil_events_total", {{"type", "execve"}}, 1234);
//   std::string body = out.text();
//
// Every family is written once, HELP and TYPE first, its samples after; a
// sample of a name whose family was not declared is refused (dropped and
// counted in errors()), so a collector's mistake cannot produce a scrape the
// server rejects. Label values are escaped (backslash, double quote, line
// feed); names must match [a-zA-Z_:][a-zA-Z0-9_:]*.
//
// Thread-safety: one thread per Exposition.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vigil::metrics {

using Label = std::pair<std::string_view, std::string_view>;

class Exposition {
 public:
  // type: counter, gauge, untyped, histogram. A second declaration of a
  // family is ignored. A histogram's samples are NAME_bucket (with an `le`
  // label), NAME_sum and NAME_count.
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, std::initializer_list<Label> labels, double value);
  void sample(std::string_view name, const std::vector<Label>& labels, double value);
  void sample(std::string_view name, double value) { sample(name, {}, value); }

  // The scrape body (families in the order declared).
  std::string text() const;
  // Samples refused (undeclared family, bad name).
  std::uint64_t errors() const { return errors_; }

  static bool valid_name(std::string_view name);
  static std::string escape_label_value(std::string_view v);

 private:
  struct Family {
    std::string name;
    std::string head;  // # HELP and # TYPE lines
    std::string body;  // samples
    bool histogram = false;
  };
  Family* find(std::string_view name);
  void checked_sample(std::string_view name, const Label* labels, std::size_t n, double value);
  void append_sample(Family& f, std::string_view name, const Label* labels, std::size_t n, double value);

  std::vector<Family> families_;
  std::uint64_t errors_ = 0;
};

}  // namespace vigil::metrics
