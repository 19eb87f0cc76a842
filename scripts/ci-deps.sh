#!/usr/bin/env bash
# Installs, on a fresh Debian machine, every tool writerctl's test suite runs besides cargo
# (and Redis/PostgreSQL, which the machine provides). `.ci/run` calls it; a person can too:
#
#   sudo scripts/ci-deps.sh
#
# Idempotent: a tool already on PATH is left alone, and `apt-get update` runs only when an
# install fails (a fresh image's package lists are often stale or empty).
#
# What uses what:
#   promtool (prometheus), systemd-analyze (systemd), curl   tests/it/deploy.rs, metrics.rs
#   mandoc                                                   .ci/run's man page lint
#   spin                                                     model/check.sh
#   bindfs, fuse3                 tests/it/netfs.rs: two "hosts" with their own client caches
#   exfat-fuse, exfatprogs        tests/it/netfs.rs: a filesystem without hard links
#   setcap (libcap2-bin)          tests that give the supervisor's helper a file capability
#   kubernetes-validate (pip)     tests/it/deploy.rs: deploy/kubernetes/ against Kubernetes schemas
#   mdbook (cargo install)        .ci/run's `mdbook build docs` (the book under docs/)
#   nfs-ganesha(-vfs), nfs-common tests/it/netfs.rs's real NFS run; only where this kernel has
#                                 an NFS client (otherwise that test skips with the reason and
#                                 installing the server would only cost time)
#   podman, runc                  tests/it/container.rs (the image under a real OCI runtime)
#                                 and scripts/image.sh; configured in the block at the end
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi

have() { # have COMMAND: on PATH, or in an sbin directory a non-root PATH may lack
  command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/sbin/$1" ]
}

install() { # install PACKAGE...
  $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null 2>&1 || {
    $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null
  }
}

need() { # need COMMAND PACKAGE...
  local cmd="$1"
  shift
  have "$cmd" || install "$@"
}

if ! have promtool; then
  install prometheus
  # Only promtool is wanted: never leave the server the package ships running on :9090
  # (a container's policy-rc.d already keeps it from starting).
  $sudo systemctl disable --now prometheus >/dev/null 2>&1 || true
fi
need systemd-analyze systemd
# The coordinator's systemd unit waits for /readyz with curl (ExecStartPost=), which
# `systemd-analyze verify` checks is installed.
need curl curl
need mandoc mandoc
need spin spin
need bindfs bindfs fuse3
need fusermount3 fuse3
need mount.exfat-fuse exfat-fuse
need mkfs.exfat exfatprogs
need losetup mount
need setcap libcap2-bin

# A kernel NFS client: built in, or a module modprobe can load.
if grep -qw -e nfs -e nfs4 /proc/filesystems 2>/dev/null || { have modprobe && $sudo modprobe -q nfs 2>/dev/null; }; then
  need ganesha.nfsd nfs-ganesha nfs-ganesha-vfs
  need mount.nfs nfs-common
fi
# --- Kubernetes manifests (issue 40) -------------------------------------------------------
# kubernetes-validate (PyPI) checks deploy/kubernetes/*.yaml against the OpenAPI schemas of a
# Kubernetes release, which it ships (no cluster, no network at test time):
# tests/it/deploy.rs `manifests_validate_against_the_schemas_of_kubernetes`. Pinned: 1.37.0
# ships the schemas of Kubernetes 1.37, the release the test names. (The Pod Security
# "restricted" check is Rust, tests/it/pod_security.rs: nothing to install.)
if ! have kubernetes-validate; then
  python3 -m pip install --quiet 'kubernetes-validate==1.37.0' 2>/dev/null ||
    python3 -m pip install --quiet --break-system-packages 'kubernetes-validate==1.37.0' ||
    { install python3-pip && python3 -m pip install --quiet --break-system-packages 'kubernetes-validate==1.37.0'; }
fi
# ------------------------------------------------------------------------------------------
# The book's builder, pinned: a newer mdBook may change the HTML ids the link test
# (tests/it/book.rs) reproduces.
have mdbook || cargo install mdbook --locked --version 0.5.4

# --- podman: the container image and its end-to-end test --------------------------------
# Used by scripts/image.sh (builds deploy/container/Containerfile) and tests/it/container.rs
# (two containers of that image on one volume). Debian's podman, with runc as its runtime.
# A sandboxed CI machine needs two settings in containers.conf, written only when the file
# does not exist yet (an administrator's own file is left alone; add them there):
#   default_ulimits = []   podman sets RLIMIT_NOFILE for every container by default, which
#                          needs CAP_SYS_RESOURCE above the current hard limit; the sandbox
#                          lacks it ("error setting rlimit type 7: operation not permitted")
#   runtime = "runc"       crun refuses the sandbox's hybrid cgroup v1/v2 layout
# No image is pulled: the test and the script build FROM scratch.
need podman podman
need runc runc
if [ ! -e /etc/containers/containers.conf ]; then
  $sudo mkdir -p /etc/containers
  printf '%s\n' \
    '# Written by writerctl'"'"'s scripts/ci-deps.sh for scripts/image.sh and tests/it/container.rs.' \
    '[containers]' \
    '# No RLIMIT_NOFILE of podman'"'"'s own: raising it needs CAP_SYS_RESOURCE, which a sandbox may lack.' \
    'default_ulimits = []' \
    '[engine]' \
    '# crun refuses hybrid cgroup v1/v2 hosts; runc runs there.' \
    'runtime = "runc"' | $sudo tee /etc/containers/containers.conf >/dev/null
  echo "ci-deps: wrote /etc/containers/containers.conf (default_ulimits = [], runtime = \"runc\")"
fi

echo "ci-deps: test tools present"
