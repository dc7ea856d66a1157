"""Hand-written policies for Gymnasium's classic-control environments, named by the shipped
protocols' ``callable`` participants (``classic_policies:lean``). Each is called as
``policy(observation, rng, **params.arguments)`` at every step; ``rng`` is the run's seeded
generator, so every random choice repeats when the run is replayed."""


def lean(observation, rng, epsilon=0.0):
    """CartPole: push towards the side the pole falls to; with probability ``epsilon``, act at
    random. It draws the same two numbers from ``rng`` at every step whichever branch it takes,
    so that under common random numbers two settings of ``epsilon`` read one stream in step:
    a step where both explore explores alike."""
    u, random_action = rng.random(), int(rng.integers(2))
    if u < epsilon:
        return random_action
    angle, angular_velocity = observation[2], observation[3]
    return int(angle + 0.5 * angular_velocity > 0)
