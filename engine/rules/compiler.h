// Resolve and compile: a parsed condition (ast.h) with macros and lists
// expanded, fields resolved against the catalogue, values type-checked, and
// everything the event path needs prepared once (hash sets, path tries, RE2
// programs, parsed numbers and networks). The result, Expr, evaluates with no
// string interpretation and no heap allocation.
//
// Thread-safety: an Expr is immutable after compile(); eval() is const,
// noexcept and may run on several threads at once.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/rules/ast.h"
#include "engine/rules/fields.h"
#include "engine/rules/open_paths.h"

namespace vigil::rules {

struct CNode;   // compiled node (compiled.h)
struct CCheck;  // compiled comparison (compiled.h)

// One node of a condition program: a specialised condition laid out flat in
// evaluation order (pre-order), so evaluating it walks contiguous memory
// instead of chasing child vectors. A node's subtree is the `size` nodes
// starting at it. Built only by the compiler; `check` points into the Expr
// that made it, which must outlive the program.
struct FNode {
  std::uint8_t kind = 0;   // the compiled node kind (CNode::Kind, compiled.h)
  bool value = false;      // constant nodes
  std::int32_t id = -1;    // CheckCache slot of the check, -1: not cached
  std::uint32_t size = 1;  // nodes in this subtree, itself included
  const CCheck* check = nullptr;
};

// Evaluates a program made by Expr::append_program (same result as Expr::eval).
bool eval_program(const FNode* program, const ExtractCtx& x) noexcept;

class Expr {
 public:
  Expr();
  // `optimise` false: no reordering of and/or children and no folding of
  // constant checks (the condition runs as written; a reference for tests).
  explicit Expr(std::unique_ptr<CNode> root, bool optimise = true);
  ~Expr();
  Expr(Expr&&) noexcept;
  Expr& operator=(Expr&&) noexcept;

  bool eval(const ExtractCtx& x) const noexcept;
  // The vigil event types for which the condition can be true; computed
  // from evt.type checks with negation pushed down.
  event::TypeMask type_mask() const;
  // Literal paths/prefixes the condition compares fd.name/fd.directory against
  // when every way to match needs one (true), or false.
  bool path_prefixes(std::vector<PathLiteral>& out) const;
  // True when a check of the condition reads one of `fields` (by name).
  bool reads_any(std::span<const std::string_view> fields) const;
  // The event types for which eval() can be true once checks that are
  // constant for every event (evt.source, evt.num) are folded: a subset of
  // type_mask(); rules are indexed under these.
  event::TypeMask eval_mask() const;
  // Appends the program eval() runs for events of type `t` to `out` (nothing
  // when eval_mask() excludes `t`), so that a rule set can keep the programs
  // of all its rules for one event type in one array.
  void append_program(event::Type t, std::vector<FNode>& out) const;
  // The condition as evaluated for events of type `t` (evt.type tests folded,
  // children of and/or in evaluation order), one node per line; "false" when
  // it can never be true for that type.
  std::string plan(event::Type t) const;

 private:
  friend class GuardIndex;
  std::unique_ptr<CNode> root_;
  // root_ specialised per event type (null: never true for that type).
  std::array<std::unique_ptr<CNode>, static_cast<std::size_t>(event::Type::kCount)> by_type_;
  event::TypeMask type_bits_;  // types whose condition is not constant false before folding
  // by_type_ flattened for evaluation: the program for type t starts at
  // flat_[flat_start_[t]] (kNoProgram: none).
  static constexpr std::uint32_t kNoProgram = 0xffffffffu;
  std::vector<FNode> flat_;
  std::array<std::uint32_t, static_cast<std::size_t>(event::Type::kCount)> flat_start_;
};

// Skips, before any of them runs, the rules whose condition cannot hold for an
// event. For each rule indexed under one event type it picks a guard: a test
// the specialised condition needs (the condition itself or one of its
// top-level `and` terms) of the form `F = v`, `F in (...)` or `F exists` on a
// single-valued field without transformers (for an address field, when every
// value is a single address, not a wider network), or an `or` of such tests. It maps
// every guard field's values to the rules they let through, so one lookup per
// field replaces one test per rule. A rule with no such guard may get a
// literal guard instead: `F startswith`, `endswith` or `contains` literals
// (one walk of a byte trie, or one search per literal, per field) or
// `F pmatch (...)` (the path's first component, looked up), or a flag guard:
// `F = true` on a boolean field (proc.is_exe_shell, proc.is_32bit...), alone
// or or'd with value and literal tests, looked up from the event's value of
// the flag (a rule that tests a flag first would read it anyway). A rule
// whose condition is an `and` with a term `not F in (networks)` (an exception
// on addresses: `not fd.snet in (rfc_1918_addresses)`) is also kept out of an
// event for which that check holds, as its condition cannot. The guards stay
// in the conditions: a rule let through is evaluated in full, so results are
// unchanged.
class GuardIndex {
 public:
  static constexpr std::size_t kMaxRules = 1024;  // more rules for one type: no index
  GuardIndex();
  ~GuardIndex();
  GuardIndex(GuardIndex&&) noexcept;
  GuardIndex& operator=(GuardIndex&&) noexcept;

  // `exprs`: the conditions of the rules indexed under type `t`, in order.
  void build(const std::vector<const Expr*>& exprs, event::Type t);
  // Whether the index can skip anything (at least two rules have guards).
  bool active() const noexcept { return active_; }
  std::size_t words() const noexcept { return words_; }
  // Sets bit i of `out` (words() words) when rule i may match the event.
  // x.cache must not be null (the values it extracts go there, for the rules).
  void candidates(const ExtractCtx& x, std::uint64_t* out) const noexcept;
  // The guard fields, for tests and `plan` output.
  std::vector<std::string> fields() const;

 private:
  struct Field;
  struct LitField;
  struct Lookup;
  // The steps of build(), after each rule's guard is chosen.
  void add_guards(const std::vector<std::vector<const CCheck*>>& chosen);
  void index_values();
  void add_exclusions(const std::vector<const CNode*>& roots);
  void lay_out_lookups();
  std::vector<Field> fields_;
  std::vector<LitField> lit_fields_;
  std::vector<Lookup> lookups_;  // what candidates() reads of fields_, laid out flat
  // Exceptions on addresses: a rule whose condition is an `and` with a term
  // `not F in (networks)` cannot match an event for which the check holds;
  // per distinct check, the rules it keeps out when it holds.
  struct Exclusion {
    const CCheck* check = nullptr;
    std::vector<std::uint64_t> rules;  // words_ words
  };
  std::vector<Exclusion> exclusions_;
  std::vector<std::uint64_t> always_;  // rules without a guard
  std::size_t words_ = 0;
  bool active_ = false;
};

// Macros and lists visible to a compile.
struct MacroDef {
  NodePtr ast;  // parsed condition; null when it failed to parse
};
using ListMap = std::map<std::string, std::vector<std::string>, std::less<>>;
using MacroMap = std::map<std::string, MacroDef, std::less<>>;

struct CompileMessage {
  std::size_t offset = 0;  // in the condition text; SIZE_MAX when not known
  std::string message;
};

struct CompileResult {
  std::unique_ptr<Expr> expr;                 // null on error or unknown field
  std::vector<CompileMessage> errors;         // type errors, bad regexes, ... (code per entry)
  std::vector<const char*> error_codes;       // parallel to errors
  std::vector<std::string> unknown_fields;    // the rule must be skipped (warning)
  std::vector<std::string> unknown_evttypes;  // evt.type values nobody knows (warning)
  std::set<std::string> used_macros;
  std::set<std::string> used_lists;
};

// Expands macros and lists in `root` (consumed) and compiles it.
// Assigns FieldCache slots to field instances, shared by every rule of one Ruleset.
// Also shares identical compiled checks between rules (CheckCache ids).
class FieldSlots {
 public:
  int slot_for(const FieldInst& f);
  // The shared check for this canonical text, or null; remember() stores one.
  std::shared_ptr<CCheck> shared_check(const std::string& key) const;
  void remember(const std::string& key, std::shared_ptr<CCheck> c);

 private:
  std::map<std::pair<const FieldDef*, std::string>, int> slots_;
  std::map<std::string, std::shared_ptr<CCheck>> checks_;
};

// `max_nodes`: the most syntax-tree nodes the condition may have, its macros
// expanded (0: no limit); a larger one is an error (code::kConditionTooLarge),
// found before the expansion that passes it is made.
CompileResult compile_condition(NodePtr root, const MacroMap& macros, const ListMap& lists, const FieldCatalog& catalog,
                                FieldSlots* slots = nullptr, bool optimise = true, std::size_t max_nodes = 200000);

// Expands list references inside list values of an AST (used when listing the
// lists a macro uses, and by compile_condition).
void collect_list_refs(const Node& n, const ListMap& lists, std::set<std::string>& out);
void collect_macro_refs(const Node& n, std::set<std::string>& out);

// An output format: literal text and field tokens, compiled once.
class OutputFormat {
 public:
  struct Token {
    bool is_field = false;  // false: literal text
    std::string literal;
    FieldInst field;                        // def is null for a field vigil does not know (<NA>)
    std::vector<Transformer> transformers;  // innermost first
    std::string name;                       // the field as written, e.g. "proc.aname[2]"
    FieldType type = FieldType::kString;
    int step = -1;  // a sequence's %stepN.field: N-1; -1: the event at hand
  };
  // Parses %field, %field[arg], %(field) and %transformer(field). Unknown fields
  // are kept (rendered <NA>) and listed in `unknown`. A syntax error fills `error`.
  // With `steps` > 0 (a sequence's output), a field may be prefixed stepN.
  // (1 <= N <= steps): %step1.proc.name, %toupper(step2.fd.sip).
  static OutputFormat parse(std::string_view text, const FieldCatalog& catalog, std::vector<std::string>& unknown,
                            std::string& error, std::size_t steps = 0);
  const std::vector<Token>& tokens() const { return tokens_; }
  // Appends `separator` (literal text) and then `more`'s tokens (append_output).
  void append(std::string_view separator, const OutputFormat& more);
  // True when a token prints the field `name` (as written, e.g. "container.id")
  // of the event at hand.
  bool prints(std::string_view name) const;

 private:
  std::vector<Token> tokens_;
};

// Extracts a field (with transformers applied) into `out`; the resulting type.
FieldType extract_field(const ExtractCtx& x, const FieldInst& f, const std::vector<Transformer>& transformers,
                        Extracted& out) noexcept;

// Pure helpers, exposed for tests.
bool glob_match(std::string_view pattern, std::string_view s, bool icase) noexcept;

}  // namespace vigil::rules
