"""A small OpenAI-compatible server on transformers: the base model plus the adapters it is told to
load, so the ``openai`` policy rolls out with the weights being trained.

    python -m envkernel_trl.server --model smollm2 --port 8000      # or --model /path/to/hf-folder

Routes (what the ``openai`` policy uses):

- ``GET /v1/models``: the base model's name and every loaded adapter's;
- ``POST /v1/chat/completions``: one chat turn (``messages``, ``tools``, ``max_tokens``,
  ``temperature``, ``seed``; ``model`` = the base's name or a loaded adapter's). The prompt is the
  chat template's (:func:`envkernel_trl.chat.prompt_text`), and ``<tool_call>`` blocks in the reply
  come back as ``tool_calls``;
- ``POST /v1/load_lora_adapter``: ``{"lora_name", "lora_path"}``, vLLM's runtime route: the
  ``openai`` policy calls it on each ``policy.updated`` of the ``trl`` trainer. A name already
  loaded answers 400 "already been loaded", as vLLM does.

One generation at a time (a lock); stdlib HTTP server, one thread per connection.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import chat


def stop_ids(tokenizer: Any) -> list[int]:
    """Token ids that end a turn: eos, and ChatML's ``<|im_end|>`` when the vocabulary has it
    (SmolLM2's GGUF names ``<|im_start|>`` as eos)."""
    ids = {tokenizer.eos_token_id}
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    if isinstance(end, int) and end != tokenizer.unk_token_id:
        ids.add(end)
    return sorted(i for i in ids if i is not None)


class Model:
    """The base model and its loaded adapters, with one lock around generation."""

    def __init__(self, tokenizer: Any, model: Any, name: str, device: str) -> None:
        self.tokenizer, self.base, self.name, self.device = tokenizer, model, name, device
        self.peft: Any = None
        self.adapters: dict[str, str] = {}
        self.lock = threading.Lock()
        self.stop_ids = stop_ids(tokenizer)

    def load_adapter(self, name: str, path: str) -> bool:
        """Load a peft adapter under ``name``; False when that name is loaded already."""
        from peft import PeftModel

        with self.lock:
            if name in self.adapters:
                return False
            if self.peft is None:
                self.peft = PeftModel.from_pretrained(self.base, path, adapter_name=name)
            else:
                self.peft.load_adapter(path, adapter_name=name)
            self.peft.eval()
            self.adapters[name] = path
            return True

    def _generate(self, ids: Any, body: dict[str, Any]) -> Any:
        import torch

        temperature = float(body.get("temperature") or 0.0)
        if body.get("seed") is not None:
            torch.manual_seed(int(body["seed"]))
        kwargs: dict[str, Any] = {
            "max_new_tokens": int(
                body.get("max_tokens") or body.get("max_completion_tokens") or 256
            ),
            "do_sample": temperature > 0,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": self.stop_ids,
        }
        if temperature > 0:
            kwargs["temperature"] = temperature
        wanted = str(body.get("model") or self.name)
        if wanted in self.adapters:
            self.peft.set_adapter(wanted)
            return self.peft.generate(input_ids=ids, **kwargs)
        if self.peft is not None:
            with self.peft.disable_adapter():
                return self.peft.generate(input_ids=ids, **kwargs)
        return self.base.generate(input_ids=ids, **kwargs)

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        """One chat completion (OpenAI's response shape)."""
        import torch

        text = chat.prompt_text(self.tokenizer, body.get("messages") or [], body.get("tools") or [])
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        with self.lock, torch.no_grad():
            out = self._generate(ids.to(self.device), body)
        new = out[0, ids.shape[1] :]
        reply = self.tokenizer.decode(new, skip_special_tokens=True)
        content, calls = chat.parse_reply(reply)
        hit_limit = len(new) >= int(body.get("max_tokens") or 256) and int(new[-1]) not in (
            self.stop_ids
        )
        message: dict[str, Any] = {"role": "assistant", "content": content or None}
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "length" if hit_limit else "stop"
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.name),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": int(ids.shape[1]),
                "completion_tokens": len(new),
                "total_tokens": int(ids.shape[1]) + len(new),
            },
        }


def handler_for(model: Model) -> type[BaseHTTPRequestHandler]:
    """The request handler class serving ``model``."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, obj: Any) -> None:
            data = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                names = [model.name, *model.adapters]
                self._send(
                    200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]}
                )
            else:
                self._send(404, {"error": {"message": f"no route {self.path}"}})

        def do_POST(self) -> None:
            body = json.loads(
                self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}"
            )
            route = self.path.rstrip("/")
            try:
                if route.endswith("/chat/completions"):
                    self._send(200, model.complete(body))
                elif route.endswith("/load_lora_adapter"):
                    self._load(body)
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
            except Exception as e:  # the client sees why; the server goes on
                self._send(500, {"error": {"message": f"{type(e).__name__}: {e}"}})

        def _load(self, body: dict[str, Any]) -> None:
            name, path = str(body.get("lora_name", "")), str(body.get("lora_path", ""))
            if not (name and path):
                self._send(400, {"error": {"message": "give lora_name and lora_path"}})
            elif model.load_adapter(name, path):
                self._send(200, {"status": "ok", "lora_name": name})
            else:
                self._send(400, {"error": {"message": f"adapter {name!r} has already been loaded"}})

    return Handler


def serve(model: Model, host: str = "127.0.0.1", port: int = 8000) -> ThreadingHTTPServer:
    """Start serving ``model`` in a background thread; returns the server (``shutdown()`` stops
    it; its ``server_port`` is the port, useful with ``port=0``)."""
    httpd = ThreadingHTTPServer((host, port), handler_for(model))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def main(argv: list[str] | None = None) -> None:
    """Command line: load the model (and optional adapters), then serve until interrupted."""
    ap = argparse.ArgumentParser(
        prog="python -m envkernel_trl.server", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--model", default="smollm2", help="HF folder, folder with a .gguf, or smollm2")
    ap.add_argument("--gguf-file", default="", help="the GGUF file in --model")
    ap.add_argument("--name", default="", help="the base model's name (default: --model)")
    ap.add_argument("--adapter", action="append", default=[], help="NAME=PATH to load at start")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    args = ap.parse_args(argv)
    from .learn import load_base, pick_device

    device = pick_device(args.device)
    tok, lm = load_base(args.model, args.gguf_file, device)
    lm.eval()
    model = Model(tok, lm, args.name or args.model, device)
    for spec in args.adapter:
        name, _, path = spec.partition("=")
        model.load_adapter(name, path)
    httpd = ThreadingHTTPServer((args.host, args.port), handler_for(model))
    print(f"serving {model.name} on http://{args.host}:{httpd.server_port}/v1", flush=True)
    httpd.serve_forever()


if __name__ == "__main__":
    main()
