#!/usr/bin/env bash
# A real Neo4j 5.26 (community, in-process neo4j-harness from Maven Central) with Bolt on 127.0.0.1,
# for the Python tests. Auth is DISABLED (connect with auth=None); set NEO4J_HARNESS_PASSWORD (>= 8 chars)
# before `start` to enable auth for user "neo4j" with that password instead.
#
#   scripts/neo4j-harness.sh start [port]   build if needed, start in the background, wait until Bolt
#                                           answers; last stdout line: NEO4J_URI=bolt://127.0.0.1:<port>
#   scripts/neo4j-harness.sh stop           stop it (SIGTERM, then SIGKILL after 30 s) and remove its data
#   scripts/neo4j-harness.sh status         "running ..." + NEO4J_URI=... (exit 0) or "not running" (exit 1)
#   scripts/neo4j-harness.sh build          build only (no-op when up to date)
#
# Environment: NEO4J_HARNESS_PORT (default 7688), MNEMO_RUN_DIR (default var/run, relative to the repo root:
# pidfile, log, data), NEO4J_HARNESS_HEAP (default 512m), NEO4J_HARNESS_JAVA_OPTS (extra JVM options),
# NEO4J_HARNESS_TIMEOUT (start timeout in s, default 180), NEO4J_HARNESS_JAVA (java binary),
# NEO4J_HARNESS_PASSWORD (see above). Progress goes to stderr; only the URI goes to stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="$ROOT/tests/neo4j_harness"
JAR="$PROJECT/target/neo4j-harness-launcher.jar"
RUN_DIR="${MNEMO_RUN_DIR:-var/run}"
case "$RUN_DIR" in /*) ;; *) RUN_DIR="$ROOT/$RUN_DIR" ;; esac
PIDFILE="$RUN_DIR/neo4j-harness.pid"
PORTFILE="$RUN_DIR/neo4j-harness.port"
LOG="$RUN_DIR/neo4j-harness.log"
BUILD_LOG="$RUN_DIR/neo4j-harness-build.log"
DATA_DIR="$RUN_DIR/neo4j-harness-data"
HOST=127.0.0.1
TIMEOUT="${NEO4J_HARNESS_TIMEOUT:-180}"
JAVA="${NEO4J_HARNESS_JAVA:-${JAVA_HOME:+$JAVA_HOME/bin/}java}"

say() { echo "neo4j-harness: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# pid of our running launcher, or nothing
running_pid() {
    local pid
    [[ -f "$PIDFILE" ]] || return 0
    pid="$(tr -dc '0-9' <"$PIDFILE")"
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'neo4j-harness-launcher'; then
        echo "$pid"
    fi
}

failure_logs() {
    local f
    tail -n 60 "$LOG" >&2 || true
    for f in "$DATA_DIR"/*/logs/debug.log; do
        [[ -f "$f" ]] || continue
        say "last lines of $f:"
        tail -n 30 "$f" >&2 || true
    done
}

port_in_use() { (exec 3<>"/dev/tcp/$HOST/$1") 2>/dev/null; }

needs_build() {
    [[ -f "$JAR" && -d "$PROJECT/target/lib" ]] || return 0
    [[ -n "$(find "$PROJECT/pom.xml" "$PROJECT/src" -newer "$JAR" -print -quit)" ]]
}

build() {
    needs_build || return 0
    command -v mvn >/dev/null || die "mvn not found (apt-get install -y maven)"
    mkdir -p "$RUN_DIR"
    say "building $PROJECT (log: $BUILD_LOG)"
    local t0=$SECONDS
    # offline first (fast, no network when ~/.m2 is warm), then online (cold cache)
    if ! (cd "$PROJECT" && mvn -o -q -B package -DskipTests) >"$BUILD_LOG" 2>&1; then
        if ! (cd "$PROJECT" && mvn -q -B package -DskipTests) >>"$BUILD_LOG" 2>&1; then
            tail -n 40 "$BUILD_LOG" >&2
            die "maven build failed (full log: $BUILD_LOG)"
        fi
    fi
    [[ -f "$JAR" ]] || die "build produced no $JAR"
    touch "$JAR"
    say "built in $((SECONDS - t0)) s"
}

check_java() {
    command -v "$JAVA" >/dev/null || die "java not found (Neo4j 5.26 needs Java 17 or 21)"
    local v
    v="$("$JAVA" -version 2>&1 | awk -F'"' '/version/ {print $2; exit}')"
    v="${v%%.*}"
    [[ "$v" =~ ^[0-9]+$ ]] || die "cannot read the version of $JAVA"
    ((v >= 17)) || die "$JAVA is Java $v; Neo4j 5.26 needs Java 17 or 21"
    ((v == 17 || v == 21)) || say "warning: Java $v; Neo4j 5.26 supports Java 17 and 21"
}

start() {
    local port="${1:-${NEO4J_HARNESS_PORT:-7688}}" pid t0 deadline
    [[ "$port" =~ ^[0-9]+$ ]] || die "bad port: $port"
    pid="$(running_pid)"
    if [[ -n "$pid" ]]; then
        local cur
        cur="$(cat "$PORTFILE" 2>/dev/null || echo "?")"
        [[ "$cur" == "$port" ]] || die "already running (pid $pid) on port $cur; stop it first"
        say "already running (pid $pid)"
        echo "NEO4J_URI=bolt://$HOST:$port"
        return 0
    fi
    rm -f "$PIDFILE" "$PORTFILE"
    port_in_use "$port" && die "port $port on $HOST is already in use by another process"
    check_java
    build
    mkdir -p "$RUN_DIR" "$DATA_DIR"
    rm -rf "${DATA_DIR:?}"/*   # leftovers of a killed run
    # Serial GC: smallest RSS and fewest threads on 2 shared cores, unless the caller picks a collector.
    local gc="-XX:+UseSerialGC"
    [[ "${NEO4J_HARNESS_JAVA_OPTS:-}" == *-XX:+Use*GC* ]] && gc=""
    # shellcheck disable=SC2206
    local opts=(
        "-Xms64m" "-Xmx${NEO4J_HARNESS_HEAP:-512m}" ${gc} "-XX:+ExitOnOutOfMemoryError"
        "-XX:-OmitStackTraceInFastThrow" "-Djdk.nio.maxCachedBufferSize=1024"
        "-Dio.netty.tryReflectionSetAccessible=true" "-Dlog4j2.disable.jmx=true"
        "--add-opens=java.base/java.nio=ALL-UNNAMED" "--add-opens=java.base/java.io=ALL-UNNAMED"
        "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED" "--add-opens=java.base/java.lang=ALL-UNNAMED"
        ${NEO4J_HARNESS_JAVA_OPTS:-}
    )
    say "starting Neo4j on $HOST:$port (auth $([[ -n "${NEO4J_HARNESS_PASSWORD:-}" ]] && echo "enabled, user neo4j" || echo disabled); log: $LOG)"
    t0=$SECONDS
    # nohup execs java, so $! is the JVM's pid. stdin is /dev/null: --ignore-stdin keeps it running.
    # 9>&-: the JVM must not inherit the lock file descriptor (it would hold the lock until it exits).
    nohup "$JAVA" "${opts[@]}" -jar "$JAR" --port "$port" --dir "$DATA_DIR" --ignore-stdin \
        </dev/null >"$LOG" 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$PIDFILE"
    echo "$port" >"$PORTFILE"
    deadline=$((SECONDS + TIMEOUT))
    while :; do
        if grep -q "^NEO4J_READY bolt://$HOST:$port\$" "$LOG" 2>/dev/null; then
            break
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            say "Neo4j exited during start; last log lines:"
            failure_logs
            rm -f "$PIDFILE" "$PORTFILE"
            exit 1
        fi
        if ((SECONDS >= deadline)); then
            say "Neo4j not ready after ${TIMEOUT} s; last log lines:"
            failure_logs
            stop >/dev/null 2>&1 || true
            exit 1
        fi
        sleep 0.5
    done
    say "ready in $((SECONDS - t0)) s (pid $pid)"
    echo "NEO4J_URI=bolt://$HOST:$port"
}

stop() {
    local pid i
    pid="$(running_pid)"
    if [[ -z "$pid" ]]; then
        say "not running"
        rm -f "$PIDFILE" "$PORTFILE"
        return 0
    fi
    say "stopping pid $pid"
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 300; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        say "still alive after 30 s: SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
        for ((i = 0; i < 50; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
    fi
    rm -f "$PIDFILE" "$PORTFILE"
    [[ -d "$DATA_DIR" ]] && rm -rf "${DATA_DIR:?}"/*
    say "stopped"
}

status() {
    local pid
    pid="$(running_pid)"
    if [[ -n "$pid" ]]; then
        local port
        port="$(cat "$PORTFILE" 2>/dev/null || echo "?")"
        say "running (pid $pid, log $LOG)"
        echo "NEO4J_URI=bolt://$HOST:$port"
        return 0
    fi
    say "not running"
    return 1
}

with_lock() {
    mkdir -p "$RUN_DIR"
    if command -v flock >/dev/null; then
        exec 9>"$RUN_DIR/neo4j-harness.lock"
        flock -w 300 9 || die "could not lock $RUN_DIR/neo4j-harness.lock"
    fi
    "$@"
}

cmd="${1:-}"
shift || true
case "$cmd" in
    start) with_lock start "$@" ;;
    stop) with_lock stop ;;
    status) status ;;
    build) with_lock build ;;
    *)
        echo "usage: $0 {start [port]|stop|status|build}" >&2
        exit 2
        ;;
esac
