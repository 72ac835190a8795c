"""Python coding environments (HumanEval, MBPP, user tasks), judged in envhub.sandbox."""
