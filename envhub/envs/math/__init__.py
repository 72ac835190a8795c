"""Math environments (gsm8k, math): answer extraction, equivalence and offline data."""
