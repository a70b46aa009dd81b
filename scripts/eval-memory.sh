#!/usr/bin/env bash
# Measures memory retrieval on the labelled data set in tests/data/memory-eval and prints
# evidence recall@5 and recall@10 for keyword (BM25), vector (MiniLM), hybrid and associative
# (seed 002's seven dimensions) search,
# overall and per kind of question (lexical, paraphrase, date).
#
#   scripts/eval-memory.sh [--json] [--misses] [--grid] [--check] [--models-dir DIR]
#                          [--weights keyword=0.4,vector=0.6,...]
#
#   --json          one JSON document (with every question's ranking) instead of the table
#   --misses        also list the questions the hybrid search did not fully answer
#   --grid          also try a grid of hybrid weights on the same store
#   --check         only check the data set; needs no model
#   --models-dir    the folder holding all-MiniLM-L6-v2/ (default: $GLASSBOX_MODELS_DIR,
#                   else the data dir's models folder, where scripts/setup.sh puts it)
#   --weights       hybrid weights to try instead of the defaults
#
# Builds examples/eval_memory.rs in release mode first. Needs the MiniLM model files; exits
# with status 2 and says where it looked when they are missing. About a minute once built.
set -euo pipefail
cd "$(dirname "$0")/.."

for arg in "$@"; do
    case $arg in
        -h | --help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    esac
done

cargo build --release --quiet --example eval_memory
exec target/release/examples/eval_memory "$@"
