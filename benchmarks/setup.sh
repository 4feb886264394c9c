#!/usr/bin/env bash
# Installs what benchmarks/run.py needs, idempotently (a second run does nothing):
#   .bench/venv35   Python venv: pyspark 3.5 + delta-spark (the Spark 3.5 peers), deltalake (delta-rs),
#                   pyarrow, duckdb, matplotlib (data generation, references, charts)
#   .bench/jars/    delta / iceberg / hudi jars for Spark 3.5, fetched by Maven (benchmarks/pom.xml)
# lakecompact itself runs in the main Python environment (pip install -e .; scripts/setup.sh).
# Needs: python3.11+ with venv, Java 17, Maven. Env: BENCH_DIR (default <repo>/.bench), PYTHON, MVN.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
BENCH="${BENCH_DIR:-$ROOT/.bench}"
PYTHON="${PYTHON:-python3}"
MVN="${MVN:-mvn}"
VENV="$BENCH/venv35"
JARS="$BENCH/jars"
say() { echo "[bench setup] $*" >&2; }

PIP_PACKAGES=(
  "pyspark==3.5.9"
  "delta-spark==3.3.2"
  "deltalake==1.6.6"
  "pyarrow>=17"
  "duckdb>=1.1"
  "matplotlib>=3.8"
)

mkdir -p "$BENCH"
command -v java >/dev/null || { say "java not found: apt-get install -y openjdk-17-jre-headless"; exit 1; }
command -v "$MVN" >/dev/null || { say "maven not found: apt-get install -y maven"; exit 1; }

# ------------------------------------------------------------------ venv ---
STAMP="$VENV/.installed"
WANT="${PIP_PACKAGES[*]}"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  say "venv35: present, skipped"
else
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  say "venv35: pip install ${PIP_PACKAGES[*]}"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "${PIP_PACKAGES[@]}"
  echo "$WANT" >"$STAMP"
fi

# ------------------------------------------------------------------ jars ---
POM_SUM=$(sha256sum "$HERE/pom.xml" | cut -c1-16)
for profile in delta iceberg hudi; do
  dest="$JARS/$profile"
  if [ -f "$dest/.fetched" ] && [ "$(cat "$dest/.fetched")" = "$POM_SUM" ]; then
    say "jars/$profile: present ($(ls "$dest"/*.jar | wc -l) jars), skipped"
    continue
  fi
  tmp="$dest.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$JARS"
  if ! "$MVN" -q -B -f "$HERE/pom.xml" -P "$profile" dependency:copy-dependencies \
        -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    say "jars/$profile: Maven fetch failed (the engine will be reported as not run):"
    cat "$tmp.log" >&2
    rm -rf "$tmp" "$tmp.log"
    continue
  fi
  rm -f "$tmp.log"; rm -rf "$dest"; mv "$tmp" "$dest"
  echo "$POM_SUM" >"$dest/.fetched"
  say "jars/$profile: fetched $(ls "$dest"/*.jar | wc -l) jars"
done

# ------------------------------------------------------- main environment ---
if ! "${LAKECOMPACT_PYTHON:-python}" -c "import lakecompact, pyspark" >/dev/null 2>&1; then
  say "lakecompact is not importable by ${LAKECOMPACT_PYTHON:-python}: run scripts/setup.sh (or pip install -e .) first"
fi
say "ready: $BENCH"
