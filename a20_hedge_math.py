import envhub
env = envhub.make("math"); g = envhub.make("gsm8k")
G, W = "5", "7"
cases = [
 f"#### {G}\nThough {W} could also work.", f"#### {G}\nOr {W}.", f"#### {G} (or {W})", f"#### {G}\n\nIf we count differently, it's {W}.",
 f"#### {G}\nAlso valid: {W}", f"#### {G}\nAnother possibility is {W}.", f"#### {G}\nIt might be {W} though.", f"#### {G}\nCould be {W} too.",
 f"#### {G}\n{W} is equally correct.", f"#### {G}\nOR {W}", f"#### {G}\n#### {W}?", f"#### {G}/{W}", f"#### {G} | {W}",
 f"#### {G} \\text{{ or }} {W}", f"\\boxed{{{G}}} \\lor \\boxed{{{W}}}", f"\\boxed{{{G} \\text{{ or }} {W}}}", f"\\boxed{{{G}}}\n(alternatively \\boxed{{{W}}})",
 f"\\boxed{{{G}}} or \\boxed{{{W}}}", f"The answer is {G} or {W}", f"The answer is {G}, unless it's {W}.", f"The answer is {G} (possibly {W}).",
 f"\\boxed{{{G}}}\nWait, {W}.", f"\\boxed{{{G}}}\nHmm, actually {W}", f"\\boxed{{{G}}}\nCorrection: {W}", f"\\boxed{{{G}}}\nI mean {W}.",
 f"\\boxed{{{G}}}\nAlthough {W} also fits.", f"\\boxed{{{G}}} — or {W}", f"\\boxed{{{G}}} / \\boxed{{{W}}}", f"\\boxed{{{G}}}, \\boxed{{{W}}}",
 f"\\boxed{{{G}}}\n\nAnswer: {W}", f"\\boxed{{{G}\\text{{ or }}{W}}}", f"\\boxed{{\\{{{G},{W}\\}}}}", f"\\boxed{{{G} \\pm 2}}", f"\\boxed{{6 \\pm 1}}",
 f"\\boxed{{{G}}}\nEither way, {W} also works", f"\\boxed{{{G}}} else {W}", f"\\boxed{{{G}}}\nBut if I misread, {W}.", f"#### {G}\nMaybe {W}",
 f"#### {G}\nProbably {W}", f"#### {G}\n\\boxed{{{W}}}", f"\\boxed{{{W}}}\n#### {G}", f"The answer is {W}.\n\\boxed{{{G}}}",
 f"{W}? No: {G}. Or {W}.", f"#### {G}\n{W} would also be right", f"#### {G}\n{W} is also correct", f"#### {G}\nor possibly {W}",
 f"#### {G} apples (or {W} if...)", f"#### {G}\n(Answer could also be {W})", f"#### {G}\nalso {W}", f"#### {G}; {W}", f"#### {G}, {W}",
 f"#### {G} and {W}", f"#### {G}–{W}", f"#### {G}-{W}", f"#### between {G} and {W}", f"#### {G} to {W}", f"#### {G}~{W}",f"#### ≈{G}",
 f"#### {G}\n\n---\nAlternative answer: {W}", f"#### {G}\nP.S. {W}", f"#### {G}\nanswer = {W}", f"#### {G}\nans: {W}", f"#### {G}\nresult: {W}",
 f"#### {G}\nFinal: {W}", f"#### {G}\nSo, {W}.", f"#### {G}\nJust kidding, {W}", f"#### {G}\nor\n{W}",
 f"#### {G}\n{W} also possible", f"#### {G}\n{W} is also a valid answer", f"#### {G}\n\u200bor {W}",
]
for e in (env, g):
    for c in cases:
        s = e.verify(e.task_from_gold(G), c)
        if s.components.get("correctness"):
            print(e.spec.name, repr(c), (s.info or {}).get("extracted"), (s.info or {}).get("method"))
print("done")
