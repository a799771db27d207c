#include "engine/sensor/open_filter.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <tuple>

namespace vigil::sensor {
namespace {

void set_name(PrefixComponent& c, std::string_view name) {
  c.len = static_cast<std::uint32_t>(name.size());
  unsigned char bytes[16] = {};
  unsigned char mask[16] = {};
  const std::size_t n = std::min<std::size_t>(name.size(), sizeof(bytes));
  std::memcpy(bytes, name.data(), n);
  std::memset(mask, 0xff, n);
  std::memcpy(c.head, bytes, sizeof(bytes));
  std::memcpy(c.mask, mask, sizeof(mask));
}

std::vector<std::string_view> split(std::string_view path) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    std::size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

Result<std::vector<PrefixComponent>> prefix_components(std::string_view prefix, std::size_t max_comps) {
  if (prefix.empty() || prefix.front() != '/')
    return Error::bad_input("open filter: a resolved-path prefix must be absolute: '" + std::string(prefix) + "'");
  std::vector<std::string_view> names = split(prefix);
  // The last name is whole when a slash follows it, else the prefix ends
  // inside it.
  const bool last_partial = !names.empty() && prefix.back() != '/';
  std::vector<PrefixComponent> out;
  for (std::size_t k = 0; k < names.size() && k < max_comps; ++k) {
    PrefixComponent c;
    set_name(c, names[k]);
    c.partial = last_partial && k + 1 == names.size();
    out.push_back(c);
  }
  return out;
}

bool components_match(const std::vector<PrefixComponent>& comps, std::string_view path) {
  std::vector<std::string_view> names = split(path);
  if (comps.size() > names.size()) return false;
  for (std::size_t k = 0; k < comps.size(); ++k) {
    PrefixComponent n;
    set_name(n, names[k]);
    const PrefixComponent& c = comps[k];
    if (c.partial ? n.len < c.len : n.len != c.len) return false;
    for (int w = 0; w < 2; ++w)
      if ((n.head[w] ^ c.head[w]) & c.mask[w]) return false;
  }
  return true;
}

}  // namespace vigil::sensor

namespace vigil::sensor {
namespace {

std::array<std::uint64_t, 2> head16(std::string_view name) {
  std::array<std::uint64_t, 2> h{0, 0};
  std::memcpy(h.data(), name.data(), std::min<std::size_t>(name.size(), 16));
  return h;
}

std::uint64_t low_bytes(std::uint64_t w, std::uint32_t n) {
  return n >= 8 ? w : w & ((std::uint64_t{1} << (n * 8)) - 1);
}

// The lengths a first component may have, as the kernel's pre-check tests
// them (bit 63: 63 bytes or longer).
std::uint64_t first_lengths(const std::vector<PrefixComponent>& comps) {
  if (comps.empty()) return ~std::uint64_t{0};  // "/": every path
  const PrefixComponent& c = comps.front();
  std::uint64_t lens = 0;
  for (std::uint32_t l = std::min<std::uint32_t>(c.len, 63); l < 64; ++l) {
    lens |= std::uint64_t{1} << l;
    if (!c.partial && l < 63) break;  // a whole name: its length (63: 63 and longer)
  }
  return lens;
}

// The trie of resolved prefixes, built node by node.
class Trie {
 public:
  Trie() : nodes_(1) {}
  void add(const std::vector<PrefixComponent>& comps, std::uint8_t flag) {
    std::uint32_t node = 0;
    if (comps.empty()) {
      nodes_[0].ends |= flag;
      return;
    }
    for (std::size_t k = 0; k < comps.size(); ++k) {
      const PrefixComponent& c = comps[k];
      if (c.partial) {  // only the last component ends inside a name
        std::uint32_t n = std::min<std::uint32_t>(c.len, 62);
        vg_of_edge e{node, n | VG_OF_PARTIAL, {low_bytes(c.head[0], n), n <= 8 ? 0 : low_bytes(c.head[1], n - 8)}};
        partial_[key(e)].ends |= flag;
        partial_keys_.emplace(key(e), e);
        nodes_[node].partial_lens |= std::uint64_t{1} << n;
        return;
      }
      vg_of_edge e{node, c.len, {c.head[0], c.head[1]}};
      auto [it, fresh] = edges_.emplace(key(e), std::make_pair(e, static_cast<std::uint32_t>(nodes_.size())));
      if (fresh) nodes_.emplace_back();
      node = it->second.second;
    }
    nodes_[node].ends |= flag;
  }
  void emit(std::vector<std::pair<vg_of_edge, vg_of_node>>& out) const {
    out.push_back({vg_of_edge{}, vg_of_node{0, nodes_[0].ends, nodes_[0].partial_lens}});
    for (const auto& [k, v] : edges_) {
      const Node& n = nodes_[v.second];
      out.push_back({v.first, vg_of_node{v.second, n.ends, n.partial_lens}});
    }
    for (const auto& [k, e] : partial_keys_) out.push_back({e, vg_of_node{0, partial_.at(k).ends, 0}});
  }

 private:
  struct Node {
    std::uint32_t ends = 0;
    std::uint64_t partial_lens = 0;
  };
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint64_t>;
  static Key key(const vg_of_edge& e) { return {e.node, e.len, e.head[0], e.head[1]}; }
  std::vector<Node> nodes_;
  std::map<Key, std::pair<vg_of_edge, std::uint32_t>> edges_;
  std::map<Key, Node> partial_;
  std::map<Key, vg_of_edge> partial_keys_;
};

Status check_length(const std::string& p) {
  if (p.size() >= VG_PREFIX_LEN)
    return Error::bad_input("open filter: path longer than " + std::to_string(VG_PREFIX_LEN - 1) + " bytes: " + p);
  return {};
}

}  // namespace

Result<OpenTables> build_open_tables(const OpenLists& lists) {
  OpenTables t;
  Trie trie;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint64_t>, std::uint8_t> names;
  std::map<std::string, std::uint8_t> given;
  auto add_given = [&](const std::string& p, std::uint8_t flag) {
    given[p] |= flag;
    (flag == VG_OF_GIVEN ? t.given_lens : t.lit_lens) |= std::uint64_t{1} << p.size();
    t.lit_lens |= std::uint64_t{1} << p.size();
  };
  for (const std::string& p : lists.given) {
    if (p.empty()) continue;
    if (Status st = check_length(p); !st) return st.error();
    add_given(p, VG_OF_GIVEN);
    t.have_given = true;
    ++t.n_literals;
  }
  auto add_prefix = [&](const std::string& p, std::uint8_t flag) -> Status {
    if (Status st = check_length(p); !st) return st;
    auto comps = prefix_components(p, VG_RP_COMPS);
    if (!comps) return comps.error();
    trie.add(*comps, flag);
    t.rp_maxcomp = std::max<std::uint32_t>(t.rp_maxcomp, static_cast<std::uint32_t>(comps->size()));
    const std::uint64_t lens = first_lengths(*comps);
    t.rp_top_len_mask |= lens;
    if (flag != VG_OF_WRITE) t.rp_any_len_mask |= lens;
    t.have_rp = true;
    ++t.n_literals;
    return {};
  };
  for (const std::string& p : lists.prefixes) {
    if (p.empty()) continue;
    if (Status st = add_prefix(p, VG_OF_ANY); !st) return st.error();
    add_given(p, VG_OF_OTHER);
  }
  for (const std::string& p : lists.write_prefixes) {
    if (p.empty()) continue;
    if (Status st = add_prefix(p, VG_OF_WRITE); !st) return st.error();
    add_given(p, VG_OF_OTHER);
    t.have_write_rp = true;
  }
  for (const std::string& p : lists.traversal_prefixes) {
    if (p.empty()) continue;
    if (Status st = add_prefix(p, VG_OF_TRAVERSAL); !st) return st.error();
    t.have_traversal = true;
  }
  for (const auto* list : {&lists.whole, &lists.dirs}) {
    const bool dir = list == &lists.dirs;
    for (const std::string& p : *list) {
      if (p.empty()) continue;
      if (Status st = check_length(p); !st) return st.error();
      const std::string leaf = p.substr(p.rfind('/') + 1);
      if (leaf.empty()) return Error::bad_input("open filter: whole path without a file name: " + p);
      const auto h = head16(leaf);
      names[{static_cast<std::uint32_t>(leaf.size()), dir ? 1u : 0u, h[0], h[1]}] |= VG_OF_ANY;
      (dir ? t.dir_len_mask : t.leaf_len_mask) |= std::uint64_t{1} << leaf.size();
      (dir ? t.have_dirs : t.have_whole) = true;
      add_given(p, VG_OF_OTHER);
      ++t.n_literals;
    }
  }
  for (const std::string& f : lists.traversal_fragments) {
    if (f.empty()) continue;
    if (f.size() > 16 || f.find('/') != std::string::npos)
      return Error::bad_input("open filter: a file-name fragment is at most 16 bytes without '/': " + f);
    t.fragments.push_back({static_cast<std::uint32_t>(f.size()), head16(f)});
    t.have_traversal = true;
    ++t.n_literals;
  }
  t.n_contains =
      t.fragments.size() > VG_CONTAINS_MAX ? VG_CONTAINS_MAX + 1 : static_cast<std::uint32_t>(t.fragments.size());
  trie.emit(t.trie);
  if (!t.have_rp) t.trie.clear();
  for (const auto& [k, v] : names) {
    const auto& [len, dir, h0, h1] = k;
    t.names.push_back({vg_of_name{len, dir, {h0, h1}}, v});
  }
  std::map<std::pair<std::uint32_t, std::uint64_t>, std::uint8_t> heads;
  for (const auto& [p, flags] : given) {
    vg_of_given g{};
    g.len = static_cast<std::uint32_t>(p.size());
    std::memcpy(g.bytes, p.data(), p.size());
    t.given.push_back({g, flags});
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(p.size(), 8));
    std::uint64_t w = 0;
    std::memcpy(&w, p.data(), n);
    heads[{n, w}] |= flags;
    ((flags & VG_OF_GIVEN) ? t.given_heads : t.lit_heads) |= 1u << n;
    t.lit_heads |= 1u << n;
  }
  for (const auto& [k, v] : heads) t.heads.push_back({vg_of_head{k.first, 0, k.second}, v});
  return t;
}

int tables_judge(const OpenTables& t, std::string_view path, bool write) {
  std::vector<std::string_view> comps = split(path);
  auto find_edge = [&](const vg_of_edge& e) -> const vg_of_node* {
    for (const auto& [k, v] : t.trie)
      if (k.node == e.node && k.len == e.len && k.head[0] == e.head[0] && k.head[1] == e.head[1]) return &v;
    return nullptr;
  };
  auto name = [&](std::string_view n, std::uint32_t dir) -> std::uint8_t {
    const auto h = head16(n);
    for (const auto& [k, v] : t.names)
      if (k.len == n.size() && k.dir == dir && k.head[0] == h[0] && k.head[1] == h[1]) return v;
    return 0;
  };
  int gated = 0;
  if (!comps.empty()) {
    const std::uint8_t nf = name(comps.back(), 0) | (comps.size() > 1 ? name(comps[comps.size() - 2], 1) : 0);
    if (nf & VG_OF_ANY) return 1;
    if (nf & VG_OF_TRAVERSAL) gated = 2;
    const std::string_view leaf = comps.back();
    for (const auto& [len, h] : t.fragments) {
      std::string frag(reinterpret_cast<const char*>(h.data()), len);
      if (leaf.size() > 16 || leaf.find(frag) != std::string_view::npos) gated = 2;
    }
  }
  const std::uint32_t want = VG_OF_ANY | (write ? VG_OF_WRITE : 0);
  const vg_of_node* v = find_edge(vg_of_edge{});
  if (!v) return gated;
  if (v->ends & want) return 1;
  if (v->ends & VG_OF_TRAVERSAL) gated = 2;
  std::uint32_t node = 0;
  std::uint64_t partial = v->partial_lens;
  for (std::size_t k = 0; k < comps.size() && k < VG_RP_COMPS && k < t.rp_maxcomp; ++k) {
    const auto len = static_cast<std::uint32_t>(comps[k].size());
    const auto w = head16(comps[k]);
    for (std::uint32_t b = 1; b < 63 && b <= len; ++b) {
      if (!((partial >> b) & 1)) continue;
      const vg_of_node* pv =
          find_edge(vg_of_edge{node, b | VG_OF_PARTIAL, {low_bytes(w[0], b), b <= 8 ? 0 : low_bytes(w[1], b - 8)}});
      if (pv && (pv->ends & want)) return 1;
      if (pv && (pv->ends & VG_OF_TRAVERSAL)) gated = 2;
    }
    v = find_edge(vg_of_edge{node, len, {w[0], w[1]}});
    if (!v) break;
    if (v->ends & want) return 1;
    if (v->ends & VG_OF_TRAVERSAL) gated = 2;
    node = v->node;
    partial = v->partial_lens;
  }
  return gated;
}

}  // namespace vigil::sensor
