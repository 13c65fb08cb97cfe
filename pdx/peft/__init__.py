"""pdx.peft: parameter-efficient fine-tuning (LoRA / QLoRA adapters) with PaddleNLP's names.

    LoRAConfig     target_modules (regexes), r, lora_alpha, lora_dropout, quantize (QLoRA)
    LoRAModel      swaps matching Linears for LoRALinear, freezes the rest; merge, save/from_pretrained
    LoRALinear     frozen weight + trainable lora_A @ lora_B
"""

from pdx.peft._lora import LoRAConfig, LoRALinear, LoRAModel

__all__ = ["LoRAConfig", "LoRALinear", "LoRAModel"]
