"""Zoo entries for the families that predate the registry: LLaMA and `pdx.vision.models`."""

from __future__ import annotations

from pdx import vision
from pdx.models import llama
from pdx.models._zoo import register, register_foreign

_LLAMA_NAMES = {"tiny": "llama-tiny", "125m": "llama-125m", "1b": "llama-1b", "7b": "llama-7b",
                "qwen2-tiny": "qwen2-tiny", "mistral-tiny": "mistral-tiny", "moe-tiny": "llama-moe-tiny"}


def _llama_builder(preset: str):
    def build(**overrides):
        return llama.LlamaForCausalLM(llama.LlamaConfig.from_preset(preset, **overrides))
    return build


def _llama_from_hf(config):
    return llama.LlamaForCausalLM(llama.config_from_hf(config))


def _llama_params(preset: str):
    return lambda **overrides: llama.LlamaConfig.from_preset(preset, **overrides).num_params()


for _preset, _name in _LLAMA_NAMES.items():
    register(_name, _llama_builder(_preset), family="llama", task="causal-lm", config=llama.PRESETS[_preset],
             description=f"LLaMA-style decoder, preset {_preset!r}", inputs=("input_ids:None,None:int32",),
             num_params=_llama_params(_preset))
for _model_type in ("llama", "qwen2", "mistral"):
    register_foreign(_model_type, _llama_from_hf, llama.hf_to_pdx,
                     num_params=lambda config: llama.config_from_hf(config).num_params())

_IMAGE = ("image:None,3,224,224:float32",)
_VISION = {
    "lenet": (vision.models.LeNet, {"num_classes": 10}, "LeNet-5 for 28x28 grey images"),
    "resnet18": (vision.models.resnet18, {"depth": 18, "num_classes": 1000}, "ResNet-18 (Paddle's names)"),
    "resnet34": (vision.models.resnet34, {"depth": 34, "num_classes": 1000}, "ResNet-34"),
    "resnet50": (vision.models.resnet50, {"depth": 50, "num_classes": 1000}, "ResNet-50 (bottleneck blocks)"),
    "mobilenet_v2": (vision.models.mobilenet_v2, {"scale": 1.0, "num_classes": 1000}, "MobileNetV2"),
    "vgg16": (vision.models.vgg16, {"num_classes": 1000}, "VGG-16"),
}
for _name, (_build, _config, _text) in _VISION.items():
    register(_name, _build, family=_name.rstrip("0123456789_v"), task="image-classification", config=_config,
             description=_text, inputs=("image:None,1,28,28:float32",) if _name == "lenet" else _IMAGE)
