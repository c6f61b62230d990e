#!/usr/bin/env bash
# zkServer.sh start-foreground CONFIG: the command go-zookeeper's test harness runs (from
# ZOOKEEPER_BIN_PATH) to start a ZooKeeper server; this one starts zkraft ($ZKRAFT_BIN) on the
# same zoo.cfg instead. The harness passes JVM system properties in SERVER_JVMFLAGS; those
# zkraft has a flag for are passed on.
set -euo pipefail
[[ ${1:-} == start-foreground && -n ${2:-} ]] || { echo "usage: zkServer.sh start-foreground CONFIG" >&2; exit 2; }
args=()
for f in ${SERVER_JVMFLAGS:-}; do
  case $f in
    -Dzookeeper.DigestAuthenticationProvider.superDigest=*) args+=(-super-digest "${f#*=}") ;;
    -Dzookeeper.extendedTypesEnabled=true) args+=(-extended-types) ;;
  esac
done
exec "${ZKRAFT_BIN:?ZKRAFT_BIN names the zkraft binary}" -config "$2" "${args[@]}"
