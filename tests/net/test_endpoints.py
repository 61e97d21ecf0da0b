"""What a server may serve under each kind of endpoint, and what it says of anything else."""

import pytest

from rs_spark import net
from rs_spark import streams as rs


class _Sub:
    def on_subscribe(self, s): ...


@pytest.mark.parametrize(
    "add,target,need",
    [
        ("add_publisher", 5, "needs a Publisher \\(an object with subscribe\\(\\)\\), got int"),
        ("add_subscriber", None, "needs a Subscriber or a factory of Subscribers, got NoneType"),
        ("add_processor", _Sub(), "needs a factory \\(a callable returning a new Processor per channel\\), got _Sub"),
    ],
)
def test_a_target_of_the_wrong_kind_is_refused_naming_what_the_kind_needs(add, target, need):
    with net.Server() as server:
        with pytest.raises(TypeError, match=f"{add}\\('x', ...\\) {need}"):
            getattr(server, add)("x", target)


def test_each_kind_takes_what_it_serves():
    with net.Server() as server:
        assert server.add_publisher("p", rs.range_(3)).endswith("/p")
        assert server.add_subscriber("s", _Sub).endswith("/s")  # a factory
        assert server.add_subscriber("t", _Sub()).endswith("/t")  # an instance
        assert server.add_processor("q", lambda: None).endswith("/q")
