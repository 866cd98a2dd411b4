#!/usr/bin/env bash
# The GPU path end to end, in one call on a machine with a CUDA GPU (a few minutes):
#
#   OUT=DIR bash scripts/gpu-check.sh      # stategym[hf,serve,llm] importable; figures in DIR
#
# 1. tests/train/test_gpu.py (skipped on a machine without CUDA);
# 2. SFT on the messages rendering, then GRPO twice from it with the same seed (bfloat16;
#    GRPO goes on in the rendering the SFT model records): the same metrics?
# 3. the trained model as hf:PATH --device cuda, greedy twice, greedy one episode at a time,
#    and sampled twice: the same tokens and scores? (stategym run under py-spy, if it is
#    installed: where the time goes, DIR/run_profile.txt, summed by scripts/profile_shares.py);
# 4. the same model behind `stategym serve --device cuda`: `stategym run --agent openai:`
#    (messages, which the server renders and tokenises again each round: compared with hf:'s
#    greedy run by actions; tokens are not logged, and the actions may differ from a round
#    whose sampled ids are not the tokenizer's encoding of their text or that was cut at
#    --max-tokens, see scripts/compare_runs.py), and token-in-token-out (the openai: agent
#    given the model's tokenizer, scripts/served_vs_hf.py: the same tokens as hf:?);
# 5. E2's smoke budget on the GPU;
# 6. benchmarks/rollout_speed.py on the GPU with the trained tiny model (as saved, and cast to
#    float32) and with a 16-layer one.
#
# DEVICE=cpu DTYPE=float32 SMALL=1 rehearses it on a CPU. Each step has a time limit; the
# log is DIR/all.log, the comparisons DIR/compare.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
DEVICE=${DEVICE:-cuda}; DTYPE=${DTYPE:-bfloat16}; SMALL=${SMALL:-0}
OUT=${OUT:-runs/gpu-check}; WORK=${WORK:-$(mktemp -d)}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH}
sg=(python3 -m stategym)
started=$(date +%s)

step() {  # NAME LIMIT COMMAND...: run under a time limit, keep its log, print its last lines
  local name=$1 limit=$2; shift 2
  local begin; begin=$(date +%s.%N)
  echo "=== $name (at $(( $(date +%s) - started )) s)"
  timeout "$limit" "$@" > "$WORK/$name.log" 2>&1
  local rc=$?
  echo "--- $name: exit $rc, $(python3 -c "import time; print(round(time.time() - $begin, 1))") s"
  grep -v "━" "$WORK/$name.log" | tail -n 4
  { echo "=== $name (exit $rc)"; cat "$WORK/$name.log"; } >> "$OUT/all.log"
}
compare() { python3 scripts/compare_runs.py "$@" | tee -a "$OUT/compare.txt"; }

nvidia-smi -L 2>/dev/null
python3 -c "import sys, torch, transformers; print(sys.version.split()[0], 'torch', torch.__version__, 'transformers', transformers.__version__, 'cuda', torch.cuda.is_available())"
if [ "$SMALL" = 1 ]; then EPISODES=8; STEPS=6; ITERATIONS=1; PLAYS=4; else EPISODES=32; STEPS=30; ITERATIONS=3; PLAYS=16; fi
train=(--device "$DEVICE" --dtype "$DTYPE" --no-progress)

step gpu_test 240 python3 -m pytest tests/train/test_gpu.py -q -p no:cacheprovider -rs
# messages, not the trainer's default compact: serve speaks OpenAI messages and refuses a
# model trained on compact (hf: plays a model in the rendering its folder records)
step sft 180 "${sg[@]}" train sft --domain travel --agents expert --episodes $EPISODES \
  --iterations $STEPS --batch-size 4 --rendering messages --out "$WORK/sft" "${train[@]}"
for n in 1 2; do
  step grpo$n 180 "${sg[@]}" train grpo --init "$WORK/sft" --credit gigpo --group 4 --tasks 4 \
    --iterations $ITERATIONS --eval-episodes 4 --out "$WORK/grpo$n" "${train[@]}"
done
compare "$WORK/grpo1" "$WORK/grpo2"
cp "$WORK/grpo1/metrics.jsonl" "$OUT/grpo_metrics.jsonl" 2>/dev/null

model=$WORK/grpo1/model
play() {  # NAME MORE...: the trained model plays held-out travel tasks
  local name=$1; shift
  step "$name" 180 "${sg[@]}" run --agent "hf:$model" --device "$DEVICE" --episodes $PLAYS \
    --max-tokens 48 --out "$WORK/$name" --index "$WORK/index.sqlite" "$@"
}
# sampled, every thread (cProfile sees only the main one; the episodes play on a worker thread)
if command -v py-spy > /dev/null; then spy=(py-spy record -r 100 -f raw -o "$OUT/run_profile.txt" --)
else spy=(); echo "py-spy not installed: run_profiled is timed, not profiled"; fi
step run_profiled 180 "${spy[@]}" "${sg[@]}" run --agent "hf:$model" --device "$DEVICE" \
  --episodes $PLAYS --max-tokens 48 --out "$WORK/run_profiled" --index "$WORK/index.sqlite"
[ -s "$OUT/run_profile.txt" ] && python3 scripts/profile_shares.py "$OUT/run_profile.txt" 20
play greedy
play one_at_a_time --concurrency 1
play sampled_1 --temperature 1
play sampled_2 --temperature 1
compare "$WORK/run_profiled" "$WORK/greedy"
compare "$WORK/greedy" "$WORK/one_at_a_time"
compare "$WORK/sampled_1" "$WORK/sampled_2"

"${sg[@]}" serve --model "$model" --device "$DEVICE" --port 8123 > "$WORK/serve.log" 2>&1 &
server=$!
for _ in $(seq 90); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', 8123), 1)" 2>/dev/null && break
  sleep 1
done
step served 180 "${sg[@]}" run --agent openai:model --base-url http://127.0.0.1:8123/v1 \
  --temperature 0 --episodes $PLAYS --max-tokens 48 --out "$WORK/served" --index "$WORK/index.sqlite"
step served_tito 180 python3 scripts/served_vs_hf.py http://127.0.0.1:8123/v1 "$model" "$DEVICE" $PLAYS
kill $server; wait $server 2>/dev/null
compare "$WORK/greedy" "$WORK/served"  # actions (tokens not logged); may differ, see above
tail -n 1 "$WORK/served_tito.log" | tee -a "$OUT/compare.txt"

step e2_smoke 240 "${sg[@]}" experiment e2 --smoke --seeds 0 --device "$DEVICE" --dtype "$DTYPE" \
  --out "$WORK/e2"
# the engine alone on the same model in both dtypes (GRPO's bfloat16 model played 25x slower
# than SFT's float32 one on an H200, 2026-12-04): rollout_speed loads the dtype saved
python3 - "$model" "$WORK/model_fp32" <<'PY'
import shutil, sys
from transformers import AutoModelForCausalLM, AutoTokenizer
AutoModelForCausalLM.from_pretrained(sys.argv[1], dtype="float32").save_pretrained(sys.argv[2])
AutoTokenizer.from_pretrained(sys.argv[1]).save_pretrained(sys.argv[2])
shutil.copy(f"{sys.argv[1]}/stategym_model.json", sys.argv[2])  # its rendering, as trained
PY
step rollout_fp32 150 python3 benchmarks/rollout_speed.py --model "$WORK/model_fp32" \
  --device "$DEVICE" --episodes 16 --concurrency 16 --repeat 2 --max-tokens 48
step rollout_tiny 150 python3 benchmarks/rollout_speed.py --model "$model" --device "$DEVICE" \
  --episodes 64 --concurrency 64 --repeat 3 --max-tokens 48 --json "$OUT/rollout_tiny.json"
if [ "$SMALL" = 1 ]; then size=(--hidden-size 256 --layers 2 --heads 4 --kv-heads 2 --intermediate-size 512)
else size=(--hidden-size 1024 --layers 16 --heads 16 --kv-heads 4 --intermediate-size 2816); fi
step big_model 150 "${sg[@]}" model init --out "$WORK/big" "${size[@]}" --steps 1 --batch-size 1 \
  --max-length 1024 --episodes 8 --threads 4
step rollout_big 180 python3 benchmarks/rollout_speed.py --model "$WORK/big" --device "$DEVICE" \
  --episodes 64 --concurrency 64 --repeat 2 --max-tokens 64 --json "$OUT/rollout_big.json"
echo "total $(( $(date +%s) - started )) s; figures in $OUT"
