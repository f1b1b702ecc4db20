"""The Python API in a few lines: a verdict, a network in paper order, a claim, its verification."""
import numpy as np

from condcheck import Claim, Layer, Network, check_activation, save_network, verify

res = check_activation("gelu", "float8_e4m3")             # .holds is True / False / None
print(res.holds, res.conditions["2"]["witness"]["delta_0"])

# Products first, sums strictly left to right, bias last, every operation rounded to the format.
net = Network("float8_e4m3", "relu", [Layer(np.array([[1.0, 1.0, 1.0]]), [0.0])])
print(net.forward([[16.0, 1.0, 1.0], [1.0, 1.0, 16.0]]))  # 16 (+) 1 is a tie: 16; 1 (+) 1 (+) 16 = 18
claim = Claim(5, points=[[16.0, 1.0, 1.0]], values=[16.0], upstream=[1.0], gradients=[[1.0, 1.0, 1.0]])
print(verify(net, claim).summary())
save_network("net.json", net, claim)                       # then: condcheck verify net.json
