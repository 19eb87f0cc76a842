#!/usr/bin/env bash
# Builds writerctl's container image with podman, from this checkout, without pulling
# anything: Cargo builds the binary on this machine, and the image is assembled FROM scratch
# (deploy/container/Containerfile) out of that binary, exactly the shared libraries `ldd`
# names for it (with the dynamic loader), a passwd/group naming uid 65532, and the CA bundle
# when this machine has one. No shell, no package manager; it runs as uid 65532.
#
# Usage:
#   scripts/image.sh                      cargo build --release, then build localhost/writerctl:dev
#   scripts/image.sh --tag NAME:TAG       another tag
#   scripts/image.sh --binary PATH        use an already built writerctl (no cargo build);
#                                         tests/it/container.rs builds its image this way
#   scripts/image.sh --context DIR        stage the build context in DIR and keep it
#                                         (default: a temporary directory, removed afterwards)
#
# Needs podman (and runc) as scripts/ci-deps.sh installs and configures them. The image runs
# on a machine with the same C library as the one it was built on or a newer one (it carries
# its own copy, so in practice: the same architecture). Every step prints one line.
set -euo pipefail
cd "$(dirname "$0")/.."

tag="localhost/writerctl:dev"
binary=""
context=""
while [ $# -gt 0 ]; do
  case "$1" in
    --tag) tag="$2"; shift 2 ;;
    --binary) binary="$2"; shift 2 ;;
    --context) context="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "usage: scripts/image.sh [--tag NAME:TAG] [--binary PATH] [--context DIR]" >&2; exit 2 ;;
  esac
done

say() { echo "image: $*"; }

command -v podman >/dev/null 2>&1 || {
  say "podman is not installed: run scripts/ci-deps.sh (Debian: apt-get install podman runc)"
  exit 1
}

if [ -z "$binary" ]; then
  say "cargo build --release --locked --bin writerctl"
  # The path Cargo reports (CARGO_TARGET_DIR, a configured target-dir), not a guess.
  binary=$(cargo build --release --locked --bin writerctl --message-format=json-render-diagnostics |
    sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n 1)
  [ -n "$binary" ] || { say "cargo reported no writerctl executable"; exit 1; }
fi
[ -x "$binary" ] || { say "$binary is not an executable file"; exit 1; }

if [ -z "$context" ]; then
  context=$(mktemp -d)
  trap 'rm -rf "$context"' EXIT
fi
rootfs="$context/rootfs"
rm -rf "$rootfs"
rm -rf "$context/runtime"
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc" "$rootfs/tmp" "$context/runtime"
chmod 1777 "$rootfs/tmp"
chmod 0700 "$context/runtime" # /run/writerctl, owned by 65532 (Containerfile)

# The binary, without its debug sections (the release profile keeps line tables: ~120 MB of
# the ~130 MB); symbol names stay, so a backtrace still names functions.
cp "$binary" "$rootfs/usr/local/bin/writerctl"
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug "$rootfs/usr/local/bin/writerctl"
fi
say "staged $binary as /usr/local/bin/writerctl ($(du -h "$rootfs/usr/local/bin/writerctl" | cut -f1))"

# Exactly what the dynamic loader would map: each `name => /path` line of ldd, and the loader
# itself (the line that is only a path). linux-vdso is the kernel's, not a file. Each library
# is copied (symlinks resolved) to the very path ldd printed, so the loader finds it where
# the binary's search says.
libs=$(ldd "$binary" 2>&1) || {
  case "$libs" in
    *"not a dynamic executable"* | *"statically linked"*) libs="" ;;
    *) say "ldd $binary failed: $libs"; exit 1 ;;
  esac
}
if printf '%s\n' "$libs" | grep -q "not found"; then
  say "ldd cannot resolve every library of $binary:"
  printf '%s\n' "$libs" | grep "not found" >&2
  exit 1
fi
for lib in $(printf '%s\n' "$libs" | sed -n -e 's/^.*=> \(\/[^ ]*\) (.*$/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) (.*$/\1/p' | sort -u); do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
  say "staged $lib"
done

cat >"$rootfs/etc/passwd" <<'EOF'
root:x:0:0:root:/nonexistent:/nonexistent
writer:x:65532:65532:writerctl:/nonexistent:/nonexistent
EOF
cat >"$rootfs/etc/group" <<'EOF'
root:x:0:
writer:x:65532:
EOF
# For `--coordinator https://...` (rustls reads the system bundle); data, not a package.
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$rootfs/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
  say "staged /etc/ssl/certs/ca-certificates.crt"
fi

cp deploy/container/Containerfile "$context/Containerfile"
say "podman build -t $tag (context $context)"
podman build --quiet --pull=never -f "$context/Containerfile" -t "$tag" "$context" >/dev/null
say "built $tag: $(podman image inspect --format '{{.Id}}' "$tag" | cut -c1-12), $(podman image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.1f MB", $1/1e6}')"
say "try: podman run --rm $tag --version"
