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

// A node's id: a hash of its parent's id and the edge's component
// (splitmix64 steps), never 0 (the root's).
std::uint64_t node_id(std::uint64_t parent, std::uint32_t len, std::uint64_t h0, std::uint64_t h1) {
  auto mix = [](std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  };
  std::uint64_t id = mix(mix(mix(mix(parent) ^ len) ^ h0) ^ h1);
  return id ? id : 1;
}

// The trie of resolved prefixes, built node by node.
class Trie {
 public:
  void add(const std::vector<PrefixComponent>& comps, std::uint8_t flag) {
    std::uint64_t node = 0;
    if (comps.empty()) {
      nodes_[0].ends |= flag;
      return;
    }
    for (const PrefixComponent& c : comps) {
      if (c.partial) {  // only the last component ends inside a name
        const std::uint32_t n = std::min<std::uint32_t>(c.len, 62);
        vg_of_edge e{};
        e.node = node;
        e.len = n | VG_OF_PARTIAL;
        e.head[0] = low_bytes(c.head[0], n);
        e.head[1] = n <= 8 ? 0 : low_bytes(c.head[1], n - 8);
        partial_[key(e)] = {e, partial_[key(e)].second | flag};
        nodes_[node].partial_lens |= std::uint64_t{1} << n;
        return;
      }
      vg_of_edge e{};
      e.node = node;
      e.len = c.len;
      e.head[0] = c.head[0];
      e.head[1] = c.head[1];
      const std::uint64_t child = node_id(node, c.len, c.head[0], c.head[1]);
      edges_.emplace(key(e), std::make_pair(e, child));
      nodes_[child];
      node = child;
    }
    nodes_[node].ends |= flag;
  }
  void emit(std::vector<std::pair<vg_of_edge, vg_of_node>>& out) const {
    auto value = [](std::uint64_t id, const Node& n) {
      vg_of_node v{};
      v.node = id;
      v.ends = n.ends;
      v.partial_lens = n.partial_lens;
      return v;
    };
    out.push_back({vg_of_edge{}, value(0, nodes_.at(0))});
    for (const auto& [k, v] : edges_) out.push_back({v.first, value(v.second, nodes_.at(v.second))});
    for (const auto& [k, p] : partial_) out.push_back({p.first, value(0, Node{p.second, 0})});
  }

 private:
  struct Node {
    std::uint32_t ends = 0;
    std::uint64_t partial_lens = 0;
  };
  using Key = std::tuple<std::uint64_t, std::uint32_t, std::uint64_t, std::uint64_t>;
  static Key key(const vg_of_edge& e) { return {e.node, e.len, e.head[0], e.head[1]}; }
  std::map<std::uint64_t, Node> nodes_{{0, Node{}}};
  std::map<Key, std::pair<vg_of_edge, std::uint64_t>> edges_;
  std::map<Key, std::pair<vg_of_edge, std::uint32_t>> partial_;
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
    (flag == VG_OF_GIVEN ? t.knobs.given_lens : t.knobs.lit_lens) |= std::uint64_t{1} << p.size();
    t.knobs.lit_lens |= std::uint64_t{1} << p.size();
  };
  for (const std::string& p : lists.given) {
    if (p.empty()) continue;
    if (Status st = check_length(p); !st) return st.error();
    add_given(p, VG_OF_GIVEN);
    t.knobs.have_given = 1;
    ++t.knobs.n_literals;
  }
  auto add_prefix = [&](const std::string& p, std::uint8_t flag) -> Status {
    if (Status st = check_length(p); !st) return st;
    auto comps = prefix_components(p, VG_RP_COMPS);
    if (!comps) return comps.error();
    trie.add(*comps, flag);
    t.knobs.rp_maxcomp = std::max<std::uint32_t>(t.knobs.rp_maxcomp, static_cast<std::uint32_t>(comps->size()));
    const std::uint64_t lens = first_lengths(*comps);
    t.knobs.rp_top_len_mask |= lens;
    if (flag != VG_OF_WRITE) t.knobs.rp_any_len_mask |= lens;
    t.knobs.have_rp = 1;
    ++t.knobs.n_literals;
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
    t.knobs.have_write_rp = 1;
  }
  for (const std::string& p : lists.traversal_prefixes) {
    if (p.empty()) continue;
    if (Status st = add_prefix(p, VG_OF_TRAVERSAL); !st) return st.error();
    t.knobs.have_traversal = 1;
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
      (dir ? t.knobs.dir_len_mask : t.knobs.leaf_len_mask) |= std::uint64_t{1} << leaf.size();
      (dir ? t.knobs.have_dirs : t.knobs.have_whole) = 1;
      add_given(p, VG_OF_OTHER);
      ++t.knobs.n_literals;
    }
  }
  for (const std::string& f : lists.traversal_fragments) {
    if (f.empty()) continue;
    if (f.size() > 16 || f.find('/') != std::string::npos)
      return Error::bad_input("open filter: a file-name fragment is at most 16 bytes without '/': " + f);
    if (t.knobs.n_contains < VG_CONTAINS_MAX) {
      const auto h = head16(f);
      t.knobs.contains_len[t.knobs.n_contains] = static_cast<std::uint32_t>(f.size());
      t.knobs.contains_head[t.knobs.n_contains][0] = h[0];
      t.knobs.contains_head[t.knobs.n_contains][1] = h[1];
    }
    ++t.knobs.n_contains;
    t.knobs.have_traversal = 1;
    ++t.knobs.n_literals;
  }
  t.knobs.n_contains = std::min<std::uint32_t>(t.knobs.n_contains, VG_CONTAINS_MAX + 1);
  trie.emit(t.trie);
  if (!t.knobs.have_rp) t.trie.clear();
  for (const auto& [k, v] : names) {
    const auto& [len, dir, h0, h1] = k;
    vg_of_name n{};
    n.len = len;
    n.dir = dir;
    n.head[0] = h0;
    n.head[1] = h1;
    t.names.push_back({n, v});
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
    ((flags & VG_OF_GIVEN) ? t.knobs.given_heads : t.knobs.lit_heads) |= 1u << n;
    t.knobs.lit_heads |= 1u << n;
  }
  for (const auto& [k, v] : heads) {
    vg_of_head h{};
    h.len = k.first;
    h.head = k.second;
    t.heads.push_back({h, v});
  }
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
    for (std::uint32_t i = 0; i < t.knobs.n_contains; ++i) {
      if (i >= VG_CONTAINS_MAX || leaf.size() > 16) {
        gated = 2;
        break;
      }
      std::string frag(reinterpret_cast<const char*>(t.knobs.contains_head[i]), t.knobs.contains_len[i]);
      if (leaf.find(frag) != std::string_view::npos) gated = 2;
    }
  }
  const std::uint32_t want = VG_OF_ANY | (write ? VG_OF_WRITE : 0);
  const vg_of_node* v = find_edge(vg_of_edge{});
  if (!t.knobs.have_rp) v = nullptr;
  if (!v) return gated;
  if (v->ends & want) return 1;
  if (v->ends & VG_OF_TRAVERSAL) gated = 2;
  std::uint64_t node = 0;
  std::uint64_t partial = v->partial_lens;
  for (std::size_t k = 0; k < comps.size() && k < VG_RP_COMPS && k < t.knobs.rp_maxcomp; ++k) {
    const auto len = static_cast<std::uint32_t>(comps[k].size());
    const auto w = head16(comps[k]);
    for (std::uint32_t b = 1; b < 63 && b <= len; ++b) {
      if (!((partial >> b) & 1)) continue;
      vg_of_edge e{};
      e.node = node;
      e.len = b | VG_OF_PARTIAL;
      e.head[0] = low_bytes(w[0], b);
      e.head[1] = b <= 8 ? 0 : low_bytes(w[1], b - 8);
      const vg_of_node* pv = find_edge(e);
      if (pv && (pv->ends & want)) return 1;
      if (pv && (pv->ends & VG_OF_TRAVERSAL)) gated = 2;
    }
    vg_of_edge e{};
    e.node = node;
    e.len = len;
    e.head[0] = w[0];
    e.head[1] = w[1];
    v = find_edge(e);
    if (!v) break;
    if (v->ends & want) return 1;
    if (v->ends & VG_OF_TRAVERSAL) gated = 2;
    node = v->node;
    partial = v->partial_lens;
  }
  return gated;
}

vg_of_knobs knobs_union(const vg_of_knobs& a, const vg_of_knobs& b) {
  vg_of_knobs u = a;
  u.n_literals = std::max(a.n_literals, b.n_literals);
  u.have_whole = a.have_whole | b.have_whole;
  u.have_dirs = a.have_dirs | b.have_dirs;
  u.have_rp = a.have_rp | b.have_rp;
  u.have_write_rp = a.have_write_rp | b.have_write_rp;
  u.have_given = a.have_given | b.have_given;
  u.have_traversal = a.have_traversal | b.have_traversal;
  u.rp_maxcomp = std::max(a.rp_maxcomp, b.rp_maxcomp);
  u.given_heads = a.given_heads | b.given_heads;
  u.lit_heads = a.lit_heads | b.lit_heads;
  u.want_payload = a.want_payload | b.want_payload;
  u.want_egress = a.want_egress | b.want_egress;
  u.dir_len_mask = a.dir_len_mask | b.dir_len_mask;
  u.leaf_len_mask = a.leaf_len_mask | b.leaf_len_mask;
  u.rp_top_len_mask = a.rp_top_len_mask | b.rp_top_len_mask;
  u.rp_any_len_mask = a.rp_any_len_mask | b.rp_any_len_mask;
  u.given_lens = a.given_lens | b.given_lens;
  u.lit_lens = a.lit_lens | b.lit_lens;
  // Name fragments: both lists where they fit, else every name counts.
  u.n_contains = a.n_contains;
  for (std::uint32_t i = 0; i < b.n_contains && i < VG_CONTAINS_MAX; ++i) {
    if (u.n_contains >= VG_CONTAINS_MAX) {
      u.n_contains = VG_CONTAINS_MAX + 1;
      break;
    }
    u.contains_len[u.n_contains] = b.contains_len[i];
    u.contains_head[u.n_contains][0] = b.contains_head[i][0];
    u.contains_head[u.n_contains][1] = b.contains_head[i][1];
    ++u.n_contains;
  }
  if (b.n_contains > VG_CONTAINS_MAX) u.n_contains = VG_CONTAINS_MAX + 1;
  return u;
}

}  // namespace vigil::sensor
