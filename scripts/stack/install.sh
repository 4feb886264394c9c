#!/usr/bin/env bash
# Installs what the lakecompact end-to-end stack needs (idempotent):
#   - Debian packages: postgresql, mariadb-server, mariadb-client (system
#     services are NOT started: stack.py runs its own data dirs), plus a JDK
#     (javac, for the metastore launcher) and Maven if missing;
#   - jars from Maven Central (scripts/stack/pom.xml) into .stack/jars/<group>/:
#       kafka/                           Kafka broker (KRaft) + Connect runtime
#       connect-plugins/debezium-postgres/   Debezium PostgreSQL connector
#       connect-plugins/debezium-mariadb/    Debezium MariaDB connector
#       spark-kafka/                     Spark Kafka source (for spark.jars)
#       spark-avro/                      Spark Avro data source
#       jdbc/                            PostgreSQL and MariaDB JDBC drivers (verify)
#       hive-metastore/                  Hive standalone metastore: jars, home/
#                                        (its unpacked tarball), launcher/ (the
#                                        loopback launcher, compiled here)
#       trino/                           home/: Trino's server with
#                                        only its Hive connector (the tarball's
#                                        other plugins are left out); java-home:
#                                        the JDK Trino runs on (Java 24.0.1 or
#                                        newer: the machine's Java 25; found
#                                        here, see "Trino's Java" below)
#       s3a/                             Hadoop S3A for pyspark's Hadoop version
#                                        (hadoop-aws, the AWS SDK v2 bundle,
#                                        analyticsaccelerator-s3) + spark-hadoop-cloud
#       s3proxy/                         S3Proxy, the stack's S3 server (stack.py up s3)
# Does nothing for a part that is already there; prints what it did.
#
# Environment: LAKECOMPACT_STACK_DIR (default <project root>/.stack),
#              PYTHON (default: python, else python3), MVN (default: mvn),
#              LAKECOMPACT_TRINO_JAVA_HOME (the JDK for Trino; default: the
#              newest JDK 24 or newer under /usr/lib/jvm).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
STACK_DIR="${LAKECOMPACT_STACK_DIR:-$ROOT/.stack}"
JARS="$STACK_DIR/jars"
POM="$HERE/pom.xml"
MVN="${MVN:-mvn}"
if [ -z "${PYTHON:-}" ]; then
  if command -v python >/dev/null 2>&1; then PYTHON=python; else PYTHON=python3; fi
fi

# Spark jar fallbacks: used only when Maven Central has no artifacts for the
# installed pyspark version (at the time of writing Central had no Spark
# 4.3.0; spark-sql-kafka stops at 4.2.0, spark-token-provider-kafka at 4.0.0,
# spark-avro at 4.1.1).
SPARK_KAFKA_FALLBACK="${SPARK_KAFKA_FALLBACK:-4.2.0}"
SPARK_TOKEN_FALLBACK="${SPARK_TOKEN_FALLBACK:-4.0.0}"
SPARK_AVRO_FALLBACK="${SPARK_AVRO_FALLBACK:-4.1.1}"
SPARK_CLOUD_FALLBACK="${SPARK_CLOUD_FALLBACK:-4.1.1}"  # spark-hadoop-cloud: none of 4.2.0, 4.3.0 on Central

say() { printf '[install] %s\n' "$*"; }
T0=$(date +%s)

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# ---------------------------------------------------------------- apt -----
pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

missing=()
for p in postgresql mariadb-server mariadb-client chromium; do  # chromium: the report test opens the page
  pkg_installed "$p" || missing+=("$p")
done
command -v javac >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v "$MVN" >/dev/null 2>&1 || missing+=(maven)

if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  as_root apt-get update -q
  # Keep Debian's maintainer scripts from starting the system services
  # (invoke-rc.d honours policy-rc.d exit code 101 = "action forbidden").
  created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | as_root tee /usr/sbin/policy-rc.d >/dev/null
    as_root chmod 755 /usr/sbin/policy-rc.d
    created_policy=1
  fi
  rc=0
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends "${missing[@]}" || rc=$?
  if [ "$created_policy" = 1 ]; then as_root rm -f /usr/sbin/policy-rc.d; fi
  [ "$rc" = 0 ] || { say "apt-get install failed ($rc)"; exit "$rc"; }
  # Where no policy-rc.d/systemd kept them down, stop the distro services:
  # we only use our own clusters under $STACK_DIR.
  for svc in postgresql mariadb; do
    if command -v service >/dev/null 2>&1; then
      as_root service "$svc" stop >/dev/null 2>&1 || true
    fi
  done
else
  say "apt packages already installed (postgresql, mariadb-server, mariadb-client, chromium, java + javac, maven)"
fi

java_major=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
if [ "${java_major:-0}" -lt 17 ] 2>/dev/null; then
  say "Java >= 17 needed (found ${java_major:-none}); installing openjdk-17-jre-headless"
  as_root apt-get install -y -q --no-install-recommends openjdk-17-jre-headless
fi

if ! "$PYTHON" -c "import requests" >/dev/null 2>&1; then
  say "pip install requests"
  "$PYTHON" -m pip install -q requests
fi

# --------------------------------------------------------------- jars -----
mkdir -p "$JARS"

# The part of the pom a profile's jars depend on: the <properties> and that
# <profile>, so that a change to one profile refetches only its group.
pom_sum() {
  awk -v id="<id>$1</id>" '
    /<properties>/ { p = 1 } p { print } /<\/properties>/ { p = 0 }
    /<profile>/ { buf = ""; inp = 1 } inp { buf = buf $0 "\n" }
    /<\/profile>/ { if (index(buf, id)) printf "%s", buf; inp = 0 }' "$POM" | sha256sum | cut -c1-16
}

# The marker of a group fetched with <profile> and [mvn -D args...].
fetch_key() { local profile="$1"; shift; echo "pom=$(pom_sum "$profile") profile=$profile $*"; }

# is_fetched <group dir> <profile> [mvn -D args...]: the group is there, fetched with these.
is_fetched() {
  local group="$1"; shift
  [ -f "$JARS/$group/.fetched" ] && [ "$(cat "$JARS/$group/.fetched")" = "$(fetch_key "$@")" ]
}

# The jars and tarballs in a group's dir (a group may hold no jar: Trino's is its server's tarball).
fetched_files() { find "$1" -maxdepth 1 -type f \( -name '*.jar' -o -name '*.tar.gz' \) | wc -l; }

# fetch <group dir> <profile> [mvn -D args...]: copy a profile's runtime jars
# into $JARS/<group dir>; skipped when the dir holds a marker for the same
# pom profile + arguments. Fetches into a temp dir first so that a failed or
# interrupted fetch never leaves a half-filled group.
fetch() {
  local group="$1" profile="$2"; shift 2
  local dest="$JARS/$group" key
  key=$(fetch_key "$profile" "$@")
  if is_fetched "$group" "$profile" "$@"; then
    say "jars/$group: present ($(fetched_files "$dest") files), skipped"
    return 0
  fi
  local tmp="$dest.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$(dirname "$dest")"
  if ! "$MVN" -q -B -f "$POM" -P "$profile" "$@" \
        dependency:copy-dependencies -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    rm -rf "$tmp"
    return 1
  fi
  rm -f "$tmp.log"
  rm -rf "$dest"
  mv "$tmp" "$dest"
  echo "$key" >"$dest/.fetched"
  say "jars/$group: fetched $(fetched_files "$dest") files ($*)"
}

fetch_or_die() {
  local group="$1"
  if ! fetch "$@"; then
    say "Maven fetch for jars/$group failed; log:"
    cat "$JARS/$group.tmp.$$.log" >&2 || true
    exit 1
  fi
  rm -f "$JARS/$group.tmp.$$.log"
}

fetch_or_die kafka kafka
fetch_or_die connect-plugins/debezium-postgres debezium-postgres
fetch_or_die connect-plugins/debezium-mariadb debezium-mariadb
fetch_or_die hive-metastore hive-metastore
fetch_or_die jdbc jdbc

# The metastore's tarball unpacked beside its jars (a refetch replaces the
# whole group, so home/ goes with it), and the loopback launcher
# (scripts/stack/metastore/LoopbackMetastore.java) compiled against it.
HMS="$JARS/hive-metastore"
if [ ! -d "$HMS/home/lib" ]; then
  rm -rf "$HMS/home.tmp" && mkdir -p "$HMS/home.tmp"
  tar xzf "$HMS"/hive-standalone-metastore-*-bin.tar.gz -C "$HMS/home.tmp" --strip-components=1
  mv "$HMS/home.tmp" "$HMS/home"
  say "jars/hive-metastore: unpacked $(ls "$HMS"/hive-standalone-metastore-*-bin.tar.gz | xargs basename)"
fi
LAUNCHER_SRC="$HERE/metastore/LoopbackMetastore.java"
LAUNCHER_KEY=$(sha256sum "$LAUNCHER_SRC" | cut -c1-16)
if [ "$(cat "$HMS/launcher/.built" 2>/dev/null)" != "$LAUNCHER_KEY" ]; then
  rm -rf "$HMS/launcher.tmp" && mkdir -p "$HMS/launcher.tmp/classes"
  javac -nowarn -d "$HMS/launcher.tmp/classes" -cp "$HMS/home/lib/*:$HMS/*" "$LAUNCHER_SRC"
  jar cf "$HMS/launcher.tmp/lakecompact-metastore.jar" -C "$HMS/launcher.tmp/classes" .
  rm -rf "$HMS/launcher.tmp/classes" "$HMS/launcher"
  echo "$LAUNCHER_KEY" >"$HMS/launcher.tmp/.built"
  mv "$HMS/launcher.tmp" "$HMS/launcher"
  say "jars/hive-metastore: compiled the loopback launcher"
else
  say "jars/hive-metastore: launcher present, skipped"
fi

fetch_or_die trino trino
TRINO="$JARS/trino"
if [ ! -d "$TRINO/home/lib" ]; then
  rm -rf "$TRINO/home.tmp" && mkdir -p "$TRINO/home.tmp"
  tarball=$(ls "$TRINO"/trino-server-*.tar.gz)
  # whole, as its jars are hard links across plugins; then only the Hive connector is kept
  tar xzf "$tarball" -C "$TRINO/home.tmp" --strip-components=1
  find "$TRINO/home.tmp/plugin" -mindepth 1 -maxdepth 1 ! -name hive -exec rm -rf {} +
  mv "$TRINO/home.tmp" "$TRINO/home"
  rm -f "$tarball"  # 821 MB, of which the Hive connector and the server's own jars (420 MB) are kept
  say "jars/trino: unpacked $(basename "$tarball") (server and Hive connector)"
fi
# Trino's Java: Trino 476 needs Java 24.0.1 or newer, the rest of the stack runs on the machine's java (17).
# LAKECOMPACT_TRINO_JAVA_HOME, else the newest JDK of 24 or newer under /usr/lib/jvm (these machines have
# Temurin 25 in /usr/lib/jvm/temurin-25-jdk-amd64), recorded in jars/trino/java-home for stack.py. None can be
# installed from here: Debian 12's packages stop at OpenJDK 17 and Maven Central has no JDK. Without one, the
# rest is installed and install.sh fails at its end, saying so.
java_spec() { "$1/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p'; }
if [ -n "${LAKECOMPACT_TRINO_JAVA_HOME:-}" ]; then jdks=("$LAKECOMPACT_TRINO_JAVA_HOME"); else jdks=(/usr/lib/jvm/*); fi
trino_java="" trino_java_version=0 trino_java_error=""
for jdk in "${jdks[@]}"; do
  [ -x "$jdk/bin/java" ] || continue
  v=$(java_spec "$jdk")
  case "$v" in ''|*[!0-9]*) continue ;; esac
  if [ "$v" -ge 24 ] && [ "$v" -gt "$trino_java_version" ]; then trino_java=$jdk trino_java_version=$v; fi
done
if [ -z "$trino_java" ]; then
  trino_java_error="no Java for Trino: Trino 476 needs a JDK 24.0.1 or newer, none found in ${LAKECOMPACT_TRINO_JAVA_HOME:-/usr/lib/jvm/*} (Debian 12 packages only OpenJDK 17, Maven Central no JDK): install one (Temurin 25) and set LAKECOMPACT_TRINO_JAVA_HOME to it"
  rm -f "$TRINO/java-home"
elif [ "$(cat "$TRINO/java-home" 2>/dev/null)" = "$trino_java" ]; then
  say "jars/trino: Java $trino_java_version for Trino ($trino_java), skipped"
else
  echo "$trino_java" >"$TRINO/java-home"
  say "jars/trino: Java $trino_java_version for Trino: $trino_java (in jars/trino/java-home)"
fi

# Spark jars: match the installed pyspark when Central has that version.
PYSPARK_DIR=$("$PYTHON" -c "import pyspark,os;print(os.path.dirname(pyspark.__file__))" 2>/dev/null || true)
PYSPARK_VER=$("$PYTHON" -c "import pyspark;print(pyspark.__version__)" 2>/dev/null || true)
if [ -z "$PYSPARK_VER" ]; then
  say "pyspark not importable with $PYTHON: Spark jars skipped"
else
  if [ -f "$JARS/spark-kafka/.fetched" ] && grep -q "pyspark=$PYSPARK_VER" "$JARS/spark-kafka/.fetched"; then
    say "jars/spark-kafka: present ($(ls "$JARS"/spark-kafka/*.jar | wc -l) jars), skipped"
  elif fetch spark-kafka spark-kafka -Dspark.version="$PYSPARK_VER" -Dpyspark=$PYSPARK_VER; then
    :
  else
    rm -f "$JARS"/spark-kafka.tmp.*.log
    say "spark-sql-kafka $PYSPARK_VER not on Maven Central; falling back to $SPARK_KAFKA_FALLBACK (token provider $SPARK_TOKEN_FALLBACK)"
    fetch_or_die spark-kafka spark-kafka -Dspark.version="$SPARK_KAFKA_FALLBACK" \
      -Dspark.token.version="$SPARK_TOKEN_FALLBACK" -Dpyspark=$PYSPARK_VER
  fi
  if [ -f "$JARS/spark-avro/.fetched" ] && grep -q "pyspark=$PYSPARK_VER" "$JARS/spark-avro/.fetched"; then
    say "jars/spark-avro: present ($(ls "$JARS"/spark-avro/*.jar | wc -l) jars), skipped"
  elif fetch spark-avro spark-avro -Dspark.avro.version="$PYSPARK_VER" -Dpyspark=$PYSPARK_VER; then
    :
  else
    rm -f "$JARS"/spark-avro.tmp.*.log
    say "spark-avro $PYSPARK_VER not on Maven Central; falling back to $SPARK_AVRO_FALLBACK"
    fetch_or_die spark-avro spark-avro -Dspark.avro.version="$SPARK_AVRO_FALLBACK" -Dpyspark=$PYSPARK_VER
  fi
  # Hadoop S3A matching the Hadoop that pyspark bundles (hadoop-aws brings the
  # AWS SDK bundle and analyticsaccelerator-s3 versions it declares), and
  # spark-hadoop-cloud for pyspark's Spark, else the fallback.
  HADOOP_VER=$(ls "$PYSPARK_DIR"/jars/hadoop-client-api-*.jar 2>/dev/null | sed -E 's/.*hadoop-client-api-(.*)\.jar$/\1/' | head -1)
  if [ -z "$HADOOP_VER" ]; then
    say "no hadoop-client-api jar in $PYSPARK_DIR/jars: jars/s3a skipped"
  else
    s3a_args=(-Dhadoop.aws.version="$HADOOP_VER" -Dspark.cloud.version="$PYSPARK_VER")
    s3a_fallback=(-Dhadoop.aws.version="$HADOOP_VER" -Dspark.cloud.version="$SPARK_CLOUD_FALLBACK")
    if is_fetched s3a s3a "${s3a_args[@]}" || is_fetched s3a s3a "${s3a_fallback[@]}"; then
      say "jars/s3a: present ($(ls "$JARS"/s3a/*.jar | wc -l) jars), skipped"
    elif fetch s3a s3a "${s3a_args[@]}"; then
      :
    else
      rm -f "$JARS"/s3a.tmp.*.log
      say "spark-hadoop-cloud $PYSPARK_VER not on Maven Central; falling back to $SPARK_CLOUD_FALLBACK"
      fetch_or_die s3a s3a "${s3a_fallback[@]}"
    fi
  fi
  # Never ship a jar Spark already has (another version of it would clash).
  if [ -d "$PYSPARK_DIR/jars" ]; then
    for g in spark-kafka spark-avro s3a; do
      for j in "$JARS/$g"/*.jar; do
        [ -e "$j" ] || continue
        a=$(basename "$j" | sed -E 's/-[0-9][^-]*(-[A-Za-z0-9.]+)?\.jar$//')
        if ls "$PYSPARK_DIR/jars/$a"-[0-9]*.jar >/dev/null 2>&1; then
          say "jars/$g: removing $(basename "$j") (pyspark ships $a)"
          rm -f "$j"
        fi
      done
    done
  fi
fi

fetch_or_die s3proxy s3proxy

say "done in $(( $(date +%s) - T0 ))s; jars under $JARS"
if [ -n "$trino_java_error" ]; then
  say "$trino_java_error"
  exit 1
fi
