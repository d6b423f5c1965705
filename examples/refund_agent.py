"""A small agent loop, recorded with arh and guarded at run time by the same policy.

A refund agent with a fake LLM and two tools, ``lookup_order`` and ``issue_refund``. The fake LLM
can be made to repeat the refund (``--repeat-refund``), the classic duplicate side effect; the
guard (``--guard``) refuses the repeat before ``issue_refund`` runs.

    python examples/refund_agent.py                              # records a passing run
    python examples/refund_agent.py --repeat-refund              # pays twice: the run fails
    python examples/refund_agent.py --repeat-refund --guard      # the guard stops the repeat

examples/test_refund_agent.py checks the same runs with the pytest plugin.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from agent_reliability_harness import Policy, validate_trace
from agent_reliability_harness.monitor import BlockedCallError
from agent_reliability_harness.record import Recorder

POLICY_PATH = Path(__file__).with_name("refund_policy.json")
MAX_TURNS = 6


def load_policy() -> Policy:
    return Policy.from_dict(json.loads(POLICY_PATH.read_text(encoding="utf-8")))


class Shop:
    """The two tools, over a tiny order database; ``refunds`` is the side effect."""

    def __init__(self) -> None:
        self.orders = {
            "A1001": {"order_id": "A1001", "total": 42.5, "status": "delivered"},
        }
        self.refunds: list[tuple[str, float]] = []

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.orders:
            raise KeyError(f"no order {order_id}")
        return dict(self.orders[order_id])

    def issue_refund(self, order_id: str, amount: float) -> dict[str, Any]:
        self.refunds.append((order_id, amount))
        return {"refund_id": f"R{len(self.refunds)}", "order_id": order_id, "amount": amount}


class FakeLLM:
    """Stands in for a chat model: it reads the conversation and picks the next action.

    Each reply is a tool call ``{"tool": ..., "arguments": ...}`` or a final answer
    ``{"text": ..., "citations": [...]}``. With ``repeat_refund`` it issues the refund a second
    time after the first one succeeded, as a model does that "retries to be sure".
    """

    def __init__(self, *, repeat_refund: bool = False) -> None:
        self.repeat_refund = repeat_refund

    def complete(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        found = re.search(r"A\d{4}", messages[0]["content"])
        order_id = found.group(0) if found else "unknown"
        results = [m for m in messages if m["role"] == "tool"]
        order = next((m["content"] for m in results if m["name"] == "lookup_order"), None)
        refunds = [m for m in results if m["name"] == "issue_refund"]
        if order is None:
            return {"tool": "lookup_order", "arguments": {"order_id": order_id}}
        wanted = 2 if self.repeat_refund else 1
        if len(refunds) < wanted:
            arguments = {"order_id": order_id, "amount": order["total"]}
            return {"tool": "issue_refund", "arguments": arguments}
        return {
            "text": f"Refunded ${order['total']:.2f} for order {order_id}.",
            "citations": [f"https://shop.example/orders/{order_id}"],
            "usage": {"input_tokens": 310, "output_tokens": 24},
        }


def run_agent(request: str, llm: FakeLLM, shop: Shop, rec: Recorder) -> str:
    """The agent loop: ask the model, run the tool it picks, feed the result back."""
    rec.user_message(request)
    tools = {
        "lookup_order": rec.tool(shop.lookup_order, name="lookup_order"),
        "issue_refund": rec.tool(shop.issue_refund, name="issue_refund"),
    }
    messages: list[dict[str, Any]] = [{"role": "user", "content": request}]
    for _ in range(MAX_TURNS):
        reply = llm.complete(messages)
        if "tool" not in reply:
            usage = reply["usage"]
            rec.model_response(
                reply["text"],
                citations=reply["citations"],
                requires_grounding=True,
                input_tokens=usage["input_tokens"],
                output_tokens=usage["output_tokens"],
            )
            return str(reply["text"])
        try:
            result: Any = tools[reply["tool"]](**reply["arguments"])
        except BlockedCallError as blocked:  # the guard refused the call: tell the model why
            result = {"blocked": sorted({f.rule_id for f in blocked.findings})}
        except Exception as exc:  # a tool error goes back to the model too  # noqa: BLE001
            result = {"error": str(exc)}
        messages.append({"role": "tool", "name": reply["tool"], "content": result})
    rec.model_response("Sorry, I could not finish the refund.")
    return "Sorry, I could not finish the refund."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat-refund", action="store_true", help="seed the duplicate refund")
    parser.add_argument("--guard", action="store_true", help="check each tool call first")
    parser.add_argument("--out", default="refund-run.json", help="where to write the trace")
    args = parser.parse_args(argv)

    policy = load_policy()
    shop = Shop()
    llm = FakeLLM(repeat_refund=args.repeat_refund)
    with Recorder(
        "refund-demo",
        agent_name="refund-agent",
        workflow="refunds",
        path=args.out,
        guard=policy if args.guard else None,
    ) as rec:
        answer = run_agent("Please refund order A1001, it arrived broken.", llm, shop, rec)

    print(f"agent: {answer}")
    print(f"refunds issued: {len(shop.refunds)}")
    for blocked in rec.trace().metadata.get("blocked_calls", []):
        print(
            f"guard blocked {blocked['tool_name']} at {blocked['step_id']}: {blocked['rule_ids']}"
        )
    print(f"trace written to {args.out} ({len(rec.steps)} steps)")
    report = validate_trace(rec.trace(), policy)
    print(f"verdict: {'PASS' if report.passed else 'FAIL'} (score {report.score:.2f})")
    for finding in report.findings:
        print(f"  {finding.severity} {finding.rule_id} {finding.step_id}: {finding.message}")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
