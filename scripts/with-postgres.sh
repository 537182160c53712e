#!/usr/bin/env bash
# with-postgres.sh COMMAND [ARGS...]
#
# Runs COMMAND with MCPGATE_TEST_POSTGRES_DSN pointing at a PostgreSQL
# superuser, so the PostgreSQL tests of the built-in worker run:
#   - if MCPGATE_TEST_POSTGRES_DSN is already set, COMMAND runs as is;
#   - else, if PostgreSQL's binaries are installed (/usr/lib/postgresql/*/bin,
#     Debian's postgresql package), a throwaway cluster is created in a temp
#     directory, listening only on a unix socket there, and is stopped and
#     removed when COMMAND ends;
#   - else COMMAND runs without it and the PostgreSQL tests skip, saying why
#     (unless MCPGATE_REQUIRE_POSTGRES=1, as in CI: then it fails).
# As root, initdb refuses to run, so the cluster runs as the postgres OS user.
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
if [ -n "${MCPGATE_TEST_POSTGRES_DSN:-}" ]; then
  exec "$@"
fi

bindir=""
for d in /usr/lib/postgresql/*/bin; do
  [ -x "$d/initdb" ] && bindir=$d # the glob sorts, so the newest wins
done
if [ -z "$bindir" ]; then
  if [ "${MCPGATE_REQUIRE_POSTGRES:-}" = 1 ]; then
    echo "with-postgres: MCPGATE_REQUIRE_POSTGRES=1 but no PostgreSQL binaries under /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2
    exit 1
  fi
  echo "with-postgres: no PostgreSQL binaries under /usr/lib/postgresql/*/bin; PostgreSQL tests will skip (apt-get install postgresql)" >&2
  exec "$@"
fi

# Under /tmp whatever TMPDIR says: the postgres user must reach it, and a
# unix socket path must stay short (about 100 bytes).
dir=$(mktemp -d /tmp/mcpgate-pg.XXXXXX)
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$dir"
  as_pg=(runuser -u postgres --)
fi

stop() {
  "${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM

"${as_pg[@]}" "$bindir/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
# No TCP listener (-h ''), the socket in our own directory, no fsync: it is
# a throwaway.
"${as_pg[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-h '' -k $dir -F -c max_connections=200" start >/dev/null ||
  { cat "$dir/server.log" >&2; exit 1; }

export MCPGATE_TEST_POSTGRES_DSN="host=$dir port=5432 user=postgres dbname=postgres sslmode=disable"
echo "with-postgres: PostgreSQL $("$bindir/postgres" --version | awk '{print $3}') on $dir" >&2
status=0
"$@" || status=$?
exit $status
