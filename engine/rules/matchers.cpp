// Glob matching (glob, iglob, pmatch's glob components) and LiteralScan.
#include "engine/rules/matchers.h"

#include <map>

namespace vigil::rules {

bool glob_match(std::string_view p, std::string_view s, bool icase) noexcept {
  std::size_t pi = 0, si = 0, star_p = std::string_view::npos, star_s = 0;
  auto eq = [icase](char a, char b) { return icase ? lower(a) == lower(b) : a == b; };
  while (si < s.size()) {
    if (pi < p.size()) {
      char c = p[pi];
      if (c == '*') {
        star_p = ++pi;
        star_s = si;
        continue;
      }
      if (c == '?') {
        ++pi;
        ++si;
        continue;
      }
      if (c == '[') {
        std::size_t j = pi + 1;
        bool neg = false;
        if (j < p.size() && (p[j] == '!' || p[j] == '^')) {
          neg = true;
          ++j;
        }
        bool matched = false;
        std::size_t start = j;
        while (j < p.size() && (p[j] != ']' || j == start)) {
          if (j + 2 < p.size() && p[j + 1] == '-' && p[j + 2] != ']') {
            char lo = p[j], hi = p[j + 2];
            char sc = s[si];
            if (icase) {
              lo = lower(lo);
              hi = lower(hi);
              sc = lower(sc);
            }
            if (sc >= lo && sc <= hi) matched = true;
            j += 3;
          } else {
            if (eq(p[j], s[si])) matched = true;
            ++j;
          }
        }
        if (j < p.size() && matched != neg) {
          pi = j + 1;
          ++si;
          continue;
        }
        if (j >= p.size() && eq('[', s[si])) {  // unterminated: literal '['
          ++pi;
          ++si;
          continue;
        }
      } else {
        if (c == '\\' && pi + 1 < p.size()) c = p[++pi];
        if (eq(c, s[si])) {
          ++pi;
          ++si;
          continue;
        }
      }
    }
    if (star_p != std::string_view::npos) {
      pi = star_p;
      si = ++star_s;
      continue;
    }
    return false;
  }
  while (pi < p.size() && p[pi] == '*') ++pi;
  return pi == p.size();
}

namespace {
unsigned char fold_byte(unsigned char b) noexcept {
  return b >= 'A' && b <= 'Z' ? static_cast<unsigned char>(b + ('a' - 'A')) : b;
}
bool has_upper(const std::string& s) noexcept {
  for (char c : s) {
    if (c >= 'A' && c <= 'Z') return true;
  }
  return false;
}
bool has_letter(const std::string& s) noexcept {
  for (char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')) return true;
  }
  return false;
}
}  // namespace

LiteralScan::LiteralScan(const std::vector<Set>& sets) {
  if (sets.empty() || sets.size() > kMaxSets) return;
  // The trie of the folded literals; per node, the sets whose literal ends
  // there as is (icase sets, and case-sensitive literals without letters)
  // and the case-sensitive literals to confirm.
  std::vector<std::map<unsigned char, std::uint32_t>> kids(1);
  std::vector<std::uint32_t> own(1, 0);
  std::vector<std::vector<Verify>> own_verify(1);
  for (std::size_t k = 0; k < sets.size(); ++k) {
    const Set& set = sets[k];
    if (set.lits.empty()) return;
    all_ |= 1u << k;
    for (const auto& l : set.lits) {
      if (l.empty()) return;
      if (set.icase && has_upper(l)) continue;  // never found, as LiteralMatcher
      std::uint32_t cur = 0;
      for (char c : l) {
        const unsigned char b = fold_byte(static_cast<unsigned char>(c));
        auto it = kids[cur].find(b);
        if (it == kids[cur].end()) {
          const auto id = static_cast<std::uint32_t>(kids.size());
          kids[cur].emplace(b, id);
          kids.emplace_back();
          own.push_back(0);
          own_verify.emplace_back();
          cur = id;
        } else {
          cur = it->second;
        }
      }
      if (set.icase || !has_letter(l)) own[cur] |= 1u << k;
      else own_verify[cur].push_back(Verify{static_cast<std::uint32_t>(k), l});
    }
  }
  std::array<std::uint32_t, 256> class_of{};  // folded byte -> class (0: in no literal)
  for (const auto& m : kids) {
    for (const auto& [b, child] : m) {
      if (class_of[b] == 0) class_of[b] = classes_++;
    }
  }
  const std::size_t states = kids.size();
  if (states * classes_ > kMaxDfa) return;
  for (unsigned b = 0; b < 256; ++b) {
    cls_[b] = static_cast<std::uint16_t>(class_of[fold_byte(static_cast<unsigned char>(b))]);
  }
  for (const auto& [b, child] : kids[0]) {
    starts_[b] = 1;
    if (b >= 'a' && b <= 'z') starts_[b - ('a' - 'A')] = 1;
  }
  // Breadth first: a state's failure state is shallower, so complete when
  // the state is reached; a state's outputs are its own and its failure
  // state's.
  std::vector<std::uint32_t> delta(states * classes_, 0);
  std::vector<std::uint32_t> fail(states, 0);
  std::vector<std::vector<Verify>> checks(states);
  mask_.assign(states, 0);
  std::vector<std::uint32_t> queue{0};
  for (std::size_t q = 0; q < queue.size(); ++q) {
    const std::uint32_t u = queue[q];
    mask_[u] = own[u] | (u == 0 ? 0 : mask_[fail[u]]);
    checks[u] = own_verify[u];
    if (u != 0) checks[u].insert(checks[u].end(), checks[fail[u]].begin(), checks[fail[u]].end());
    for (std::uint32_t c = 0; c < classes_; ++c) delta[u * classes_ + c] = u == 0 ? 0 : delta[fail[u] * classes_ + c];
    for (const auto& [b, v] : kids[u]) {
      const std::uint32_t c = class_of[b];
      fail[v] = u == 0 ? 0 : delta[fail[u] * classes_ + c];
      delta[u * classes_ + c] = v;
      queue.push_back(v);
    }
  }
  verify_at_.assign(states + 1, 0);
  for (std::size_t i = 0; i < states; ++i) {
    verify_at_[i] = static_cast<std::uint32_t>(verify_.size());
    for (auto& v : checks[i]) verify_.push_back(std::move(v));
  }
  verify_at_[states] = static_cast<std::uint32_t>(verify_.size());
  dfa_.resize(states * classes_);
  for (std::size_t i = 0; i < dfa_.size(); ++i) {
    const std::uint32_t v = delta[i];
    const bool hit = mask_[v] != 0 || verify_at_[v] != verify_at_[v + 1];
    dfa_[i] = v * classes_ | (hit ? kHit : 0);
  }
  ok_ = true;
}

std::uint32_t LiteralScan::scan(std::string_view s, std::uint32_t stop) const noexcept {
  if (!ok_) return 0;
  const auto* b = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  const std::uint32_t* d = dfa_.data();
  std::uint32_t found = 0;
  std::uint32_t st = 0;
  for (std::size_t i = 0; i < n; ++i) {
    if (st == 0) {
      // In the start state, only a byte that begins a literal moves.
      while (!starts_[b[i]]) {
        if (++i == n) return found;
      }
    }
    st = d[st + cls_[b[i]]];
    if (!(st & kHit)) continue;
    const std::uint32_t v = (st & ~kHit) / classes_;
    st &= ~kHit;
    found |= mask_[v];
    for (std::uint32_t k = verify_at_[v]; k < verify_at_[v + 1]; ++k) {
      const Verify& c = verify_[k];
      const std::size_t len = c.lit.size();
      if (i + 1 >= len && std::memcmp(b + i + 1 - len, c.lit.data(), len) == 0) found |= 1u << c.set;
    }
    if ((found & stop) != 0 || found == all_) return found;
  }
  return found;
}

}  // namespace vigil::rules
