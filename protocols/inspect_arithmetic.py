"""A small inspect_ai task and two mock models for protocols/inspect-arithmetic.json: five
arithmetic questions, scored by inspect's ``match`` scorer, answered by ``mockllm/model`` with
``custom_outputs`` that set their token usage themselves (the mock's default usage counts tokens
with a tokenizer file it downloads, which an offline study cannot).

Each model's answer is a function of the question and of the seed inspect passes in the
generate config (the run's seed): a replicate repeats exactly, and the replicates of a sample
differ as sampled answers do. ``careful`` answers right but for one in ten; ``hasty`` one in two.
"""

import random

from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import match
from inspect_ai.solver import chain_of_thought, generate

#: Question, answer and sample ID; every sample says its scenario version, as the protocol's
#: scenarios require.
QUESTIONS = [
    ("add", "What is 17 + 25?", 42),
    ("sub", "What is 93 - 58?", 35),
    ("mul", "What is 12 * 11?", 132),
    ("div", "What is 144 / 12?", 12),
    ("pow", "What is 2 ** 10?", 1024),
]


@task
def arithmetic():
    """Five questions, the model's last number matched against the answer."""
    dataset = [
        Sample(id=sid, input=question, target=str(answer), metadata={"scenario_version": 1})
        for sid, question, answer in QUESTIONS
    ]
    return Task(dataset=dataset, solver=generate(), scorer=match(numeric=True))


def reasoned():
    """The solver arm that asks the model to think step by step first."""
    return [chain_of_thought(), generate()]


def _answerer(error_rate):
    answers = {question: answer for _, question, answer in QUESTIONS}

    def answer(messages, tools, tool_choice, config):
        prompt = messages[-1].text
        question = next((q for q in answers if q in prompt), None)
        correct = answers.get(question, 0)
        draw = random.Random(f"{config.seed}:{question}").random()
        value = correct if draw >= error_rate else correct + 1
        reasoning = "Let me work it out step by step. " if "step by step" in prompt else ""
        text = f"{reasoning}The answer is {value}."
        output = ModelOutput.from_content(model="mockllm/model", content=text)
        words = len(prompt.split())
        output.usage = ModelUsage(
            input_tokens=words,
            output_tokens=len(text.split()),
            total_tokens=words + len(text.split()),
        )
        return output

    return answer


def careful():
    """A mock model right nine times in ten."""
    return get_model("mockllm/model", custom_outputs=_answerer(0.1), memoize=False)


def hasty():
    """A mock model right one time in two."""
    return get_model("mockllm/model", custom_outputs=_answerer(0.5), memoize=False)
