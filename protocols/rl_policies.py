"""A hand-written policy for all three of Gymnasium's CartPole-v1, Acrobot-v1 and MountainCar-v0,
named by protocols/gymnasium-rl-aggregates.json's ``callable`` participants
(``rl_policies:pump``), so that one algorithm can be scored on several tasks. (Kept apart from
classic_policies.py, whose file the paired examples pin: a function added there would change
their bundles' sources.)

It is called as ``policy(observation, rng, epsilon=...)`` at every step; ``rng`` is the run's
seeded generator, so every random choice repeats when the run is replayed.
"""


def pump(observation, rng, epsilon=0.0):
    """Push along the motion, and with probability ``epsilon`` push either way at random.

    The environment is told by its observation's length: CartPole (4) pushes towards the side
    the pole falls to; Acrobot (6) applies its torque with the second joint's angular velocity,
    pumping energy into the swing; MountainCar (2) pushes the way the car moves. It draws the
    same two numbers from ``rng`` at every step, whichever branch it takes."""
    u, coin = rng.random(), int(rng.integers(2))
    if len(observation) == 4:
        angle, angular_velocity = observation[2], observation[3]
        greedy, random_action = int(angle + 0.5 * angular_velocity > 0), coin
    elif len(observation) == 6:
        greedy, random_action = (2 if observation[5] > 0 else 0), 2 * coin
    else:
        greedy, random_action = (2 if observation[1] >= 0 else 0), 2 * coin
    return random_action if u < epsilon else greedy
