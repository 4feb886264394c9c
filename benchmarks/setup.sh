#!/usr/bin/env bash
# Installs what benchmarks/run.py needs, idempotently (a second run does nothing):
#   .bench/venv41   Python venv with pyspark 4.1: lakecompact (editable, from this checkout) and the Spark 4.1 peers
#                   run on it alike; deltalake (delta-rs), pyarrow, duckdb, matplotlib (data generation,
#                   references, charts)
#   .bench/jars/    delta / iceberg / hudi jars for Spark 4.1 / Scala 2.13, fetched by Maven (benchmarks/pom.xml);
#                   a profile Maven Central has no build for is recorded as unavailable, with the reason
# Needs: python3.11+ with venv, Java 17, Maven. Env: BENCH_DIR (default <repo>/.bench), PYTHON, MVN.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(dirname "$HERE")"
BENCH="${BENCH_DIR:-$ROOT/.bench}"
PYTHON="${PYTHON:-python3}"
MVN="${MVN:-mvn}"
VENV="$BENCH/venv41"
JARS="$BENCH/jars"
say() { echo "[bench setup] $*" >&2; }

# No delta-spark wheel: the Delta engine uses only SQL and the DataFrame writer, its jars come from Maven, and the
# wheel pins its own pyspark range.
PIP_PACKAGES=(
  "pyspark==4.1.4"
  "deltalake==1.6.6"
  "pyarrow>=17"
  "duckdb>=1.1"
  "matplotlib>=3.8"
)

mkdir -p "$BENCH"
command -v java >/dev/null || { say "java not found: apt-get install -y openjdk-17-jre-headless"; exit 1; }
command -v "$MVN" >/dev/null || { say "maven not found: apt-get install -y maven"; exit 1; }

# ------------------------------------------------------------------ venv ---
# lakecompact goes in with the pinned pyspark in one resolution, so that its `pyspark>=4.0,<5` cannot pull
# another Spark; its own dependencies change with pyproject.toml, hence the file's hash in the stamp.
STAMP="$VENV/.installed"
WANT="${PIP_PACKAGES[*]} -e $ROOT $(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  say "venv41: present, skipped"
else
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  say "venv41: pip install ${PIP_PACKAGES[*]} -e $ROOT"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q "${PIP_PACKAGES[@]}" -e "$ROOT"
  echo "$WANT" >"$STAMP"
fi
SPARK_JARS="$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')"

# ------------------------------------------------------------------ jars ---
# Spark loads its own classes before those of spark.jars, so a dependency Spark ships already would only be copied
# at every session start and sit beside another version of itself: such jars are dropped.
drop_shipped() {
  local jar base dropped=0
  for jar in "$1"/*.jar; do
    base="$(basename "$jar" .jar | sed -E 's/-[0-9][0-9A-Za-z.-]*$//')"
    if compgen -G "$SPARK_JARS/$base-[0-9]*.jar" >/dev/null; then
      rm -f "$jar"; dropped=$((dropped + 1))
    fi
  done
  echo "$dropped"
}

POM_SUM=$(sha256sum "$HERE/pom.xml" | cut -c1-16)
for profile in delta iceberg hudi; do
  dest="$JARS/$profile"
  if [ -f "$dest/.fetched" ] && [ "$(cat "$dest/.fetched")" = "$POM_SUM" ]; then
    say "jars/$profile: present ($(ls "$dest"/*.jar | wc -l) jars), skipped"
    continue
  fi
  if [ -f "$dest/.unavailable" ] && [ "$(head -1 "$dest/.unavailable")" = "$POM_SUM" ]; then
    say "jars/$profile: skipped, known missing for this pom: $(tail -n +2 "$dest/.unavailable")"
    continue
  fi
  tmp="$dest.tmp.$$"
  rm -rf "$tmp"; mkdir -p "$JARS"
  if ! "$MVN" -q -B -f "$HERE/pom.xml" -P "$profile" dependency:copy-dependencies \
        -DoutputDirectory="$tmp" >"$tmp.log" 2>&1; then
    # the jars there are of an earlier pom (another Spark line): never to be loaded into this one
    rm -rf "$dest"
    # Maven words a missing artifact one way when it asks Central and another when it remembers having asked
    missing="$(grep -oE 'Could not find artifact [^ ]+|[^ ]+ was not found in' "$tmp.log" | head -1 \
               | sed -E 's/^Could not find artifact //; s/ was not found in$//' || true)"
    if [ -n "$missing" ]; then
      # a definite "not published" (not a network failure): remembered, so that the next run does not ask again
      mkdir -p "$dest"
      printf '%s\nno build for Spark 4.1: %s is not on Maven Central\n' "$POM_SUM" "$missing" >"$dest/.unavailable"
      say "jars/$profile: $(tail -n +2 "$dest/.unavailable") (its engines will be reported as not run)"
    else
      say "jars/$profile: Maven fetch failed (its engines will be reported as not run; run this again):"
      cat "$tmp.log" >&2
    fi
    rm -rf "$tmp" "$tmp.log"
    continue
  fi
  rm -f "$tmp.log"
  dropped="$(drop_shipped "$tmp")"
  rm -rf "$dest"; mv "$tmp" "$dest"
  echo "$POM_SUM" >"$dest/.fetched"
  say "jars/$profile: fetched $(ls "$dest"/*.jar | wc -l) jars ($dropped more that Spark ships left out)"
done

# --------------------------------------------------------- class archive ---
# The CLI's commands are timed whole: they should start as the main environment's do, with the class archive
# (scripts/setup.sh builds that one). Both live in lakecompact's cache folder: each archive records its Spark, so
# neither build removes the other's.
"$VENV/bin/python" -m lakecompact class-archive 2>&1 | sed 's/^/[bench setup] venv41: /' >&2 \
  || say "venv41: no class archive; the CLI's commands start slower than in the main environment"

if [ -d "$BENCH/venv35" ]; then
  say "venv35 (Spark 3.5, no longer used): left in place; rm -rf $BENCH/venv35 frees $(du -sh "$BENCH/venv35" | cut -f1)"
fi
say "ready: $BENCH ($("$VENV/bin/python" -c 'import pyspark; print("pyspark", pyspark.__version__)'))"
