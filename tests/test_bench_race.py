"""The GRPO race's work (bench/grpo_step.py --race-trl): tasks SmolLM2 can score on, and one
reward for both trainers, envhub's own gsm8k check."""

import re

from bench.trl_grpo import REWARD_WEIGHTS, default_prompts, envhub_reward


def test_the_race_asks_one_digit_sums_and_scores_them_with_gsm8k(tmp_path):
    rows = default_prompts(16, seed=0)
    assert len({r["task_id"] for r in rows}) == 16
    for r in rows:
        a, b = map(int, re.fullmatch(r"What is (\d) \+ (\d)\?", r["prompt"]).groups())
        assert int(r["answer"]) == a + b
    assert REWARD_WEIGHTS == {"correctness": 1.0, "format": 0.0}
    reward = envhub_reward(rows, tmp_path)
    gold, other = rows[0], rows[1]
    texts = [
        f"#### {gold['answer']}",
        [{"role": "assistant", "content": f"The answer is {gold['answer']}."}],
        f"#### {int(gold['answer']) + 1}",
        f"#### {gold['answer']} or maybe {int(gold['answer']) + 1}",  # a hedge earns nothing
        f"x{other['answer']}",
    ]
    ids = [gold["task_id"]] * 4 + [other["task_id"]]
    assert reward(texts, ids) == [1.0, 1.0, 0.0, 0.0, 0.0]
