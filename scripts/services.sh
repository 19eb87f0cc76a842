#!/usr/bin/env bash
# Brings up, on a fresh Debian machine, everything writerctl's full test suite needs besides
# cargo, so that no test skips:
#
#   every tool scripts/ci-deps.sh installs   promtool, systemd-analyze, curl, mandoc, spin,
#                                            bindfs/fuse3, exfat, setcap, an NFS server,
#                                            podman + runc (tests/it/container.rs)
#   Redis at 127.0.0.1:6379                  the coordinator's Redis + Postgres store tests
#   PostgreSQL at 127.0.0.1:5432, user       (tests/it/redis_pg.rs, services.rs, serve.rs,
#   postgres, trust auth, database test      store_bounds.rs, work_store.rs, ...)
#
# Usage:
#   scripts/services.sh           install and start what is missing (sudo when not root)
#   scripts/services.sh --check   only say what is there and what is not (exit 1 if anything is missing)
#
# Idempotent: what already answers is left alone (never restarted, never reconfigured), so
# `.ci/run` calls it on a CI machine whose services are already up. Every step prints one
# line. The tests read WRITERCTL_TEST_REDIS_URL and WRITERCTL_TEST_POSTGRES_URL when set; a
# service named there is someone else's, and is only reported.
#
# Trust authentication lets any local user connect to PostgreSQL over loopback as any role:
# fine for a test machine, not for one that holds data.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
cd "$(dirname "$0")/.."

check_only=0
case "${1:-}" in
  --check) check_only=1 ;;
  "") ;;
  *)
    echo "usage: scripts/services.sh [--check]" >&2
    exit 2
    ;;
esac

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi

say() { echo "services: $*"; }
shown() { # shown URL: without the user and password it may carry
  case "$1" in
    *://*@*) echo "${1%%://*}://${1#*@}" ;;
    *) echo "$1" ;;
  esac
}
missing=0

install() { # install PACKAGE...
  $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null 2>&1 || {
    $sudo apt-get update -q >/dev/null 2>&1 && $sudo apt-get install -y -q --no-install-recommends "$@" >/dev/null
  }
}

as_postgres() { # as_postgres COMMAND...: run as the postgres system user
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

# --- the tools ---------------------------------------------------------------------------
if [ "$check_only" -eq 1 ]; then
  for t in promtool systemd-analyze curl mandoc spin bindfs setcap podman runc kubernetes-validate; do
    if command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || [ -x "/sbin/$t" ]; then
      say "tool $t: present"
    else
      say "tool $t: MISSING (scripts/ci-deps.sh installs it)"
      missing=1
    fi
  done
else
  bash scripts/ci-deps.sh | sed 's/^/services: /'
fi

# --- Redis -------------------------------------------------------------------------------
redis_answers() ( # redis_answers: PONG from 127.0.0.1:6379 (a subshell: the socket closes with it)
  exec 3<>/dev/tcp/127.0.0.1/6379 || exit 1
  printf 'PING\r\n' >&3
  reply=""
  read -r -t 3 reply <&3 || true
  [ "${reply%$'\r'}" = "+PONG" ]
)

if [ -n "${WRITERCTL_TEST_REDIS_URL:-}" ]; then
  say "redis: the tests use WRITERCTL_TEST_REDIS_URL=$(shown "$WRITERCTL_TEST_REDIS_URL") (not managed here)"
elif redis_answers 2>/dev/null; then
  say "redis: answering at 127.0.0.1:6379 (left as it is)"
elif [ "$check_only" -eq 1 ]; then
  say "redis: MISSING (nothing answers PING at 127.0.0.1:6379)"
  missing=1
else
  if ! command -v redis-server >/dev/null 2>&1; then
    install redis-server
    say "redis: installed redis-server"
  fi
  # The packaged service where an init system runs it; otherwise a daemon of our own,
  # loopback only and without persistence (the tests need neither).
  $sudo service redis-server start >/dev/null 2>&1 ||
    $sudo redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save '' --appendonly no >/dev/null
  for _ in $(seq 50); do redis_answers 2>/dev/null && break || sleep 0.2; done
  redis_answers 2>/dev/null || {
    say "redis: started, but nothing answers at 127.0.0.1:6379"
    exit 1
  }
  say "redis: started at 127.0.0.1:6379"
fi

# --- PostgreSQL --------------------------------------------------------------------------
pg_answers() { # pg_answers: the tests' own connection works (trust, database test)
  psql -w -X -q -tA "postgresql://postgres@127.0.0.1:5432/test" -c 'SELECT 1' 2>/dev/null | grep -qx 1
}
pg_port_open() {
  (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null
}

if [ -n "${WRITERCTL_TEST_POSTGRES_URL:-}" ]; then
  say "postgres: the tests use WRITERCTL_TEST_POSTGRES_URL=$(shown "$WRITERCTL_TEST_POSTGRES_URL") (not managed here)"
elif command -v psql >/dev/null 2>&1 && pg_answers; then
  say "postgres: answering at 127.0.0.1:5432 as postgres, database test, no password (left as it is)"
elif ! command -v psql >/dev/null 2>&1 && pg_port_open; then
  # Something listens, and without psql there is no checking how it is set up: leave it.
  say "postgres: something listens at 127.0.0.1:5432 (not checked: no psql; left as it is)"
elif [ "$check_only" -eq 1 ]; then
  say "postgres: MISSING (postgresql://postgres@127.0.0.1:5432/test does not answer without a password)"
  missing=1
else
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    install postgresql
    say "postgres: installed postgresql"
  fi
  $sudo service postgresql start >/dev/null 2>&1 || {
    for c in /etc/postgresql/*/main; do
      v=$(basename "$(dirname "$c")")
      $sudo pg_ctlcluster "$v" main start >/dev/null 2>&1 || true
    done
  }
  for _ in $(seq 50); do pg_port_open && break || sleep 0.2; done
  # Trust on loopback, first in pg_hba.conf (the first matching line wins).
  changed=0
  for hba in /etc/postgresql/*/main/pg_hba.conf; do
    [ -f "$hba" ] || continue
    if ! $sudo grep -q '^# writerctl tests (scripts/services.sh)' "$hba"; then
      tmp=$(mktemp)
      {
        echo '# writerctl tests (scripts/services.sh): loopback connections need no password'
        echo 'host all all 127.0.0.1/32 trust'
        echo 'host all all ::1/128 trust'
        $sudo cat "$hba"
      } >"$tmp"
      $sudo install -m 640 -o postgres -g postgres "$tmp" "$hba"
      rm -f "$tmp"
      changed=1
      say "postgres: trust for 127.0.0.1 and ::1 added to $hba"
    fi
  done
  if [ "$changed" -eq 1 ]; then
    as_postgres psql -X -q -c 'SELECT pg_reload_conf()' >/dev/null
  fi
  if ! as_postgres psql -X -tA -c "SELECT 1 FROM pg_database WHERE datname = 'test'" | grep -qx 1; then
    as_postgres createdb test
    say "postgres: created database test"
  fi
  pg_answers || {
    say "postgres: set up, but postgresql://postgres@127.0.0.1:5432/test does not answer without a password"
    exit 1
  }
  say "postgres: answering at 127.0.0.1:5432 as postgres, database test, no password"
fi

if [ "$missing" -eq 1 ]; then
  say "something is missing: run scripts/services.sh (without --check) to install and start it"
  exit 1
fi
say "ready: \`cargo test\` runs every test (WRITERCTL_REQUIRE_SERVICES=1 turns a skip into a failure)"
