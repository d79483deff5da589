#!/usr/bin/env bash
# Re-run every command whose output the docs quote and write it to docs/snippets/<name>.txt
# (first line: the command; then what it printed). The pages include these files, so the
# outputs on the site are the program's own. Run from anywhere after `pip install -e .`:
#
#     bash docs/snippets/regenerate.sh            # all (about 2 minutes on 2 cores)
#     bash docs/snippets/regenerate.sh predict    # only snippets whose name contains "predict"
#
# Commands run in the repository root, as the docs show them; the files they write
# (law.json, bits.yaml, designs.parquet, frontier.csv, recommended/, my-runtime.yaml) are
# git-ignored.
# stderr (progress bars) is not recorded except for the error examples (2>&1).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=docs/snippets
filter="${1:-}"
export COLUMNS=100

snip() {
  local name="$1" cmd="$2" shown="${3:-$2}"
  if [ -n "$filter" ] && [[ "$name" != *"$filter"* ]]; then
    return
  fi
  echo "snippet $name: $cmd" >&2
  {
    echo "\$ $shown"
    bash -c "$cmd"
    local status=$?
    if [ "$status" -ne 0 ] && [ "$name" != app ]; then
      echo "(exit code $status)"
      if [[ "$cmd" != *"2>&1"* ]]; then
        echo "WARNING: snippet $name exited with $status" >&3
      fi
    fi
  } 3>&2 >"$out/$name.txt" 2>/dev/null
}

snip hw-list "codesign hw list"
snip hw-show "codesign hw show h100-sxm"
snip hw-show-json "codesign hw show h100-sxm --bw-scale 2 --json"
snip roofline "codesign roofline --hw a100-sxm-80gb --flop 1e12 --bytes 1e9 --dtype bf16"
snip models "codesign models"
snip predict "codesign predict --model llama-3.1-8b --hw h100-sxm"
snip predict-batch "codesign predict --model llama-3.1-8b --hw h100-sxm --batch 8 --input 2048 --output 256"
snip predict-wall "codesign predict --model llama-3.1-70b --hw rtx-4090 | head -9"
snip predict-whatif "codesign predict --model llama-3.1-8b --hw jetson-orin-nano-8gb --wbits 4 --bw-scale 2"
snip predict-csv "codesign predict --model mixtral-8x7b --hw h100-sxm --tp 2 --ep 2 --use-case coding-agent --csv | head -8"
snip predict-json "codesign predict --model qwen2.5-0.5b --hw jetson-agx-orin-64gb --wbits 4 --json | head -30"
snip predict-error "codesign predict --model llama-3.1-8b --hw h100 2>&1"
snip predict-runtime "codesign predict --model llama-3-8b --hw h100-sxm --batch 16 --input 1024 --output 256 --runtime vllm | tail -8"
snip calibrate "codesign calibrate --measurements data/validation/llm_inference_bench/normalized.csv --runtime deepspeed-mii --out my-runtime.yaml"
snip predict-my-runtime "codesign predict --model llama-3.1-8b --hw a100-sxm-40gb --batch 8 --runtime my-runtime.yaml | tail -8"
snip predict-scenarios "codesign predict --scenarios docs/snippets/scenarios.csv"
snip predict-measured "codesign predict --scenarios docs/snippets/measured.csv | python -c \"import sys, pandas; print(pandas.read_csv(sys.stdin)[['line', 'batch', 'input_tokens', 'output_tokens', 'ttft_s', 'measured_ttft_s', 'ttft_error_pct', 'throughput_tokens_per_s', 'measured_throughput_tok_s', 'throughput_error_pct']].round(3).to_string(index=False))\""
snip runtime-residuals "python benchmarks/runtime_residuals.py | sed -n '/^Mixture/,\$p'"
snip validate-acceptance "python benchmarks/validate.py | sed -n '/^Acceptance/,/^$/p'"
snip serve "codesign serve --model llama-3.1-8b --hw h100-sxm --tp 1 --runtime vllm --rate 10 --duration 600 --use-case chat --slo-ttft-p99-s 2 --slo-tpot-p99-ms 50"
snip serve-max-rate "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --use-case chat --slo-ttft-p99-s 2 --slo-tpot-p99-ms 50 --find-max-rate --no-progress"
snip serve-pools "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --policy disaggregated --decode-hw a100-sxm-80gb --rate 40 --duration 120 --slo-ttft-p99-s 1 --slo-tpot-p99-ms 50 --find-replicas --no-progress"
snip serve-pools-max-rate "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --policy disaggregated --decode-replicas 2 --decode-hw a100-sxm-80gb --duration 120 --rate 8 --slo-ttft-p99-s 1 --slo-tpot-p99-ms 50 --find-max-rate --no-progress"
snip serve-unmeetable "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --policy disaggregated --input 8000 --slo-ttft-p99-s 0.2 --slo-tpot-p99-ms 50 --find-max-rate --no-progress"
snip serve-replicas "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --rate 60 --duration 120 --slo-ttft-p99-s 2 --slo-tpot-p99-ms 50 --find-replicas --no-progress"
snip serve-prefix "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --rate 2 --duration 600 --input 6000 --prefix-share 0.9 --prefix-tokens 4000 --prefix-count 64 --prefix-zipf 1.1 | grep -E 'workload|TTFT|KV cache|prefix'"
snip serve-prefix-small "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --rate 2 --duration 600 --input 6000 --prefix-share 0.9 --prefix-tokens 4000 --prefix-count 64 --prefix-zipf 1.1 --gpu-memory-utilization 0.3 | grep -E 'TTFT|KV cache|prefix'"
snip serve-multistep "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --rate 10 --duration 600 --use-case chat --scheduler-steps 10 | grep -E 'TTFT|TPOT|ITL|E2E'"
snip serve-sweep "codesign serve --model llama-3.1-8b --hw h100-sxm --runtime vllm --sweep-rates 4,8,12,16 --sweep-policies continuous,chunked --duration 300 --slo-ttft-p99-s 2 --slo-tpot-p99-ms 50 --no-progress"
snip speculate "codesign speculate --model llama-3.1-8b --draft llama-3.2-1b --hw h100-sxm --k 4 --acceptance 0.7"
snip disagg "codesign disagg --model llama-3.1-8b --prefill-hw h100-sxm --decode-hw h200-sxm --input 8192"
# The dashboard serves until Ctrl+C: send that (SIGINT) after 20 s.
snip app "timeout -s INT 20 codesign app --port 8599; echo '^C (after 20 s)'" "codesign app --port 8599"
snip requirements-70b "codesign requirements --model llama-3.1-70b --use-case coding-agent --max-ttft-s 2 --max-tpot-ms 30 --base-hw h100-sxm"
snip requirements-devices "codesign requirements --model llama-3.1-70b --use-case chat --concurrency 16 --max-ttft-s 1 --max-tpot-ms 30 --base-hw h100-sxm --wbits 8 --kvbits 8 --method devices"
snip requirements-cost "codesign requirements --model mixtral-8x7b --use-case web-use --concurrency 8 --max-ttft-s 1.5 --max-tpot-ms 25 --min-throughput 2000 --base-hw h100-sxm --method devices --objective cost"
snip requirements-forward "codesign requirements --model llama-3.1-70b --use-case chat --concurrency 16 --max-ttft-s 2 --max-tpot-ms 30 --base-hw h100-sxm --wbits 8 --kvbits 8 --method devices --params-scale 2 --context-scale 4"
snip requirements-error-floor "codesign requirements --model llama-3.1-8b --base-hw h100-sxm --max-ttft-s 0.0001 2>&1"
snip requirements-error-negative "codesign requirements --model llama-3.1-8b --base-hw h100-sxm --max-tpot-ms -3 2>&1"
snip oicf "codesign oicf --hw h100-sxm --models llama-3.1-70b,llama-3.1-70b+mla,deepseek-v3+gqa,deepseek-v3 --use-cases chat,coding-agent,computer-use --bits 8/8"
snip quantize "codesign quantize --model llama-3.1-8b --hw jetson-agx-orin-64gb --max-memory-gb 6 --max-tpot-ms 40 --bits 16,8,4 --out bits.yaml"
snip quantize-bits-file "codesign predict --model llama-3.1-8b --hw jetson-agx-orin-64gb --bits-file bits.yaml"
snip quantize-infeasible "codesign quantize --model llama-3.1-8b --hw jetson-agx-orin-64gb --max-memory-gb 3 --bits 16,8,4 2>&1"
snip fit "codesign fit --data chinchilla --form chinchilla --out law.json --drop-highest-loss 5"
snip loss "codesign loss --law law.json --layers 24 --hidden 2048 --tokens 1e11"
snip loss-moe "codesign loss --law law.json --layers 32 --hidden 4096 --ffn 14336 --gated --kv-heads 8 --experts 8 --top-k 2 --tokens 2e12 --weight-bits 4"
snip loss-qt "codesign loss --law law.json --layers 32 --hidden 4096 --ffn 14336 --gated --kv-heads 8 --experts 8 --top-k 2 --tokens 2e12 --weight-bits 4 --precision-model quantised-training"
snip search "codesign search --space examples/orin_space.yaml --objective loss,tpot --max-memory-gb 8 --out designs.parquet --frontier-out frontier.csv"
snip search-runtime "codesign search --space examples/orin_space.yaml --runtime vllm --max-tpot-ms 12 --max-training-hours 30000 --objective loss --show 3"
snip search-training-infeasible "codesign search --space examples/orin_space.yaml --max-training-hours 1000 --no-progress 2>&1"
snip search-budget "codesign search --space examples/edge_quickstart.yaml --budget tpot --show 3"
snip search-sample "codesign search --space examples/scale_space.yaml --method sample --samples 20000 --refine-rounds 5"
snip search-ray "codesign search --space examples/edge_quickstart.yaml --method ray --keep frontier --show 5"
rec="codesign recommend --space examples/orin_space.yaml --objective loss,tpot --max-memory-gb 8 --top 5 --out-dir recommended/ && ls recommended/ recommended/*/ | head -12"
snip recommend "rm -rf recommended; $rec" "$rec"
snip recommend-check "cd recommended/01-*/ && codesign predict --model config.json --hw platform.yaml --bits-file bits.yaml --batch 1 --input 512 --output 128 | head -8"
snip python-predict "python docs/snippets/predict_example.py"
snip python-scaling "python docs/snippets/scaling_example.py"
# The test suite (a few minutes); its summary is quoted on the getting-started page.
snip pytest "pytest -q"
