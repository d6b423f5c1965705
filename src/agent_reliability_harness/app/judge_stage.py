"""The judge options of ``arh validate`` (``--rubric`` and the others): the rubric, the
calibration records and the judgment file read, and the judge stage built from them
(docs/answers-and-judge.md, "The judge")."""

from __future__ import annotations

import os
from argparse import Namespace
from typing import Final

from agent_reliability_harness.app.output import error
from agent_reliability_harness.errors import InputError, UsageError
from agent_reliability_harness.judge.client import DEFAULT_BASE_URL, ChatJudge, ClientSettings
from agent_reliability_harness.judge.model import DETERMINISTIC, Judgment, JudgmentKey
from agent_reliability_harness.judge.stage import (
    JudgeStage,
    load_calibrations,
    load_judgments,
    load_rubric,
)
from agent_reliability_harness.model.policy import Policy

__all__ = ["judge_stage"]

DEFAULT_API_KEY_ENV: Final = "OPENAI_API_KEY"

Judged = tuple[JudgeStage | None, tuple[InputError, ...]]


def judge_stage(args: Namespace, policy: Policy) -> Judged | None:
    """The judge stage of ``args`` (None in it without ``--rubric``) and the errors of the
    judgment file's bad lines; None, after printing why, when a file cannot be used (a usage or
    configuration error: exit status 2)."""
    if args.rubric is None:
        return None, ()
    try:
        rubric = load_rubric(args.rubric, args.max_input_size)
    except InputError as exc:
        error(f"invalid rubric: {exc}")
        return None
    try:
        calibrations = load_calibrations(args.calibration, args.max_input_size)
    except InputError as exc:
        error(f"invalid calibration record: {exc}")
        return None
    model = args.judge_model or rubric.model or DETERMINISTIC
    live = args.judge == "live"
    judgments_path = args.judgments
    if model != DETERMINISTIC and judgments_path is None:
        error(f"judging with the model {model} needs --judgments FILE (the judgment file)")
        return None
    found: dict[JudgmentKey, Judgment] = {}
    problems: tuple[InputError, ...] = ()
    if judgments_path is not None:
        try:
            found, problems = load_judgments(judgments_path, args.max_input_size, missing_ok=live)
        except InputError as exc:
            error(f"cannot use the judgment file: {exc}")
            return None
    client = None
    if live and model != DETERMINISTIC:
        variable = args.judge_api_key_env or rubric.api_key_env or DEFAULT_API_KEY_ENV
        key = os.environ.get(variable)
        if key is None:
            error(f"--judge live needs the API key in the environment variable {variable}")
            return None
        settings = ClientSettings(
            args.judge_base_url or DEFAULT_BASE_URL,
            model,
            key,
            timeout=args.judge_timeout,
            retries=args.judge_retries,
        )
        try:
            client = ChatJudge(settings)
        except UsageError as exc:
            error(str(exc))
            return None
    try:
        stage = JudgeStage(
            rubric,
            model,
            mode="live" if live else "replay",
            judgments=found,
            judgments_path=judgments_path,
            calibrations=calibrations,
            client=client,
            selection=policy.rules,
            fail_under=args.fail_under,
        )
    except UsageError as exc:
        error(str(exc))
        return None
    return stage, problems
