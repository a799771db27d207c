#!/usr/bin/env bash
# Builds the vigil image from Debian packages alone, without a container
# registry: mmdebstrap makes a minimal Debian 12 root filesystem with the
# packages of deploy/image-packages.txt, the built vigil (binary, bundled rules,
# plugins) is added to it, and podman imports the result with deploy/Dockerfile's
# ENTRYPOINT and CMD. deploy/Dockerfile is the same image for those who have a
# registry: both read deploy/image-packages.txt.
#
#   deploy/build-image.sh [--tag NAME:TAG] [--save FILE] [--refresh]   # as root
#   deploy/build-image.sh --check-packages                 # the list against the build
#
# vigil is taken from the build directory (VIGIL_BUILD_DIR, default build/, as
# scripts/build.sh leaves it; installed stripped). The root filesystem comes from
# the Debian archive that this machine's apt uses (/etc/apt/sources.list.d/
# debian.sources, else /etc/apt/sources.list; VIGIL_IMAGE_SOURCES names another
# file) and is kept in <build>/image/, keyed by the package list and the sources,
# so a second build takes seconds; --refresh makes it again (Debian's security
# updates since the last one). --save writes the image archive (podman
# save's docker-archive: `ctr -n k8s.io images import FILE` on a node, or
# `skopeo copy docker-archive:FILE docker://REGISTRY/vigil:TAG`).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=${VIGIL_BUILD_DIR:-build}
case $build in /*) ;; *) build=$root/$build ;; esac
packages_file=$root/deploy/image-packages.txt
tag=""
save=""
check_only=0
refresh=0
while [ $# -gt 0 ]; do
  case $1 in
    --tag) tag=${2:?--tag needs NAME:TAG}; shift 2 ;;
    --save) save=${2:?--save needs a file}; shift 2 ;;
    --check-packages) check_only=1; shift ;;
    --refresh) refresh=1; shift ;;
    *) echo "build-image: unknown argument: $1" >&2; exit 64 ;;
  esac
done

die() { echo "build-image: $*" >&2; exit 1; }

# The package names of deploy/image-packages.txt, one a line.
packages() { sed -e 's/#.*//' -e 's/[[:space:]]//g' "$packages_file" | grep -v '^$'; }

# Checks deploy/image-packages.txt against the built binaries: it must hold the
# owner (dpkg -S on this Debian 12 build machine) of every library that vigil or
# a plugin names as NEEDED, and nothing else but ca-certificates. libc6 and
# libgcc-s1 are left out: every Debian base has them.
check_packages() {
  local bins=("$build/vigil") f lib owner path
  [ -x "$build/vigil" ] || die "no $build/vigil: build first (scripts/build.sh)"
  for f in "$build"/plugins/*.so; do [ -e "$f" ] && bins+=("$f"); done
  local -A libs=() want=()
  for f in "${bins[@]}"; do
    while read -r lib; do libs[$lib]=1; done \
      < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  done
  # One dpkg-query for all of them: "pkg[:arch][, pkg...]: /path/lib".
  local owners pats=()
  for lib in "${!libs[@]}"; do pats+=("*/$lib"); done
  owners=$(dpkg-query -S "${pats[@]}" 2>/dev/null) || true
  # Only the build's own architecture: with another one's libraries installed
  # too (libc6-i386's /usr/lib32/libc.so.6), a name has several owners.
  local multiarch
  multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)
  for lib in "${!libs[@]}"; do
    owner=""
    while IFS= read -r line; do
      path=${line##*: }
      [ "${path##*/}" = "$lib" ] || continue
      if [ -n "$multiarch" ]; then
        case "$path" in */"$multiarch"/*) ;; *) continue ;; esac
      fi
      owner=${line%%: *}; owner=${owner%%[:,]*}; break
    done <<< "$owners"
    [ -n "$owner" ] || die "no installed package has $lib (NEEDED by vigil or a plugin)"
    want[$owner]=1
  done
  unset 'want[libc6]' 'want[libgcc-s1]'
  want[ca-certificates]=1
  local expected listed
  expected=$(printf '%s\n' "${!want[@]}" | sort)
  listed=$(packages | sort)
  if [ "$expected" != "$listed" ]; then
    echo "build-image: deploy/image-packages.txt is not what the build links:" >&2
    diff <(echo "$listed") <(echo "$expected") | sed -n \
      -e 's/^< /  listed but not linked: /p' -e 's/^> /  linked but not listed: /p' >&2
    exit 1
  fi
  echo "build-image: deploy/image-packages.txt matches the libraries of ${#bins[@]} binaries"
}

check_packages
[ "$check_only" -eq 1 ] && exit 0

[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap and podman build as root here)"
for t in mmdebstrap podman tar sha256sum flock; do
  command -v "$t" >/dev/null || die "needs $t (apt-get install mmdebstrap podman)"
done

if [ -z "$tag" ]; then
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build/CMakeCache.txt")
  [ -n "$version" ] || die "no project version in $build/CMakeCache.txt"
  tag=vigil:$version
fi

sources=${VIGIL_IMAGE_SOURCES:-}
if [ -z "$sources" ]; then
  for s in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    if [ -s "$s" ]; then sources=$s; break; fi
  done
fi
if [ -z "$sources" ] || [ ! -s "$sources" ]; then
  die "no apt sources file (set VIGIL_IMAGE_SOURCES)"
fi

# The entry point is deploy/Dockerfile's, so both builds start vigil the same way.
entrypoint=$(grep -m1 '^ENTRYPOINT ' deploy/Dockerfile) || die "deploy/Dockerfile has no ENTRYPOINT"
cmd=$(grep -m1 '^CMD ' deploy/Dockerfile) || die "deploy/Dockerfile has no CMD"

# Documentation, manual pages and translations are left out of the image.
mmdebstrap_args=(--variant=essential --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
  "--include=$(packages | paste -sd, -)"
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*')
cache=$build/image
mkdir -p "$cache"
exec 9>"$cache/lock"
flock 9   # one build at a time per build directory (the test and a person may overlap)
key=$( { printf '%s\n' "${mmdebstrap_args[@]}"; cat "$sources"; } | sha256sum | cut -c1-16)
rootfs=$cache/rootfs-$key.tar
start=$SECONDS
if [ "$refresh" -eq 1 ] || [ ! -s "$rootfs" ]; then
  echo "build-image: making the Debian 12 root filesystem (mmdebstrap, from $sources)"
  rm -rf "$cache"/rootfs-*
  mmdebstrap --quiet --format=tar "${mmdebstrap_args[@]}" bookworm "$rootfs.part" "$sources" \
    > "$cache/mmdebstrap.log" 2>&1 || { cat "$cache/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
  mv "$rootfs.part" "$rootfs"
else
  echo "build-image: root filesystem from $rootfs"
fi

work=$(mktemp -d "$cache/work.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=$work/stage
cmake --install "$build" --prefix "$stage/usr" --strip >/dev/null
rm -rf "$stage/usr/include"   # the plugin ABI header: for plugin builds, not the agent

# Every library vigil and the plugins link must be in the root filesystem.
tar -tf "$rootfs" | sed 's|^\./||' > "$work/rootfs.list"
for f in "$stage/usr/sbin/vigil" "$stage"/usr/lib/vigil/plugins/*.so; do
  while read -r lib; do
    grep -qxF -e "usr/lib/x86_64-linux-gnu/$lib" -e "usr/lib/$lib" "$work/rootfs.list" \
      || die "${f#"$stage"} needs $lib, which the image lacks: add its package to $packages_file"
  done < <(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done

cp "$rootfs" "$work/image.tar"
(cd "$stage" && tar -rf "$work/image.tar" --owner=0 --group=0 --numeric-owner \
  ./usr/sbin/vigil ./usr/lib/vigil ./usr/share/vigil)
podman import --quiet --change "$entrypoint" --change "$cmd" "$work/image.tar" "$tag" >/dev/null
if [ -n "$save" ]; then
  rm -f "$save"
  podman save --quiet --format docker-archive -o "$save" "$tag"
fi
size=$(podman image inspect --format '{{.Size}}' "$tag")
echo "build-image: $tag built in $((SECONDS - start)) s, $((size / 1024 / 1024)) MiB"
