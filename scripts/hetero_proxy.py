#!/usr/bin/env python3
# A linear proxy for 'does the generator's label need the neighbourhood' (docs/results/hetero.md):
# softmax regression on paper features, then with each relation's neighbour mean (1 and 2 hops).
# Usage: python3 scripts/hetero_proxy.py DATASET (needs numpy, scipy and torch).
import sys, json, numpy as np, torch
d = sys.argv[1]; meta = json.load(open(d + '/meta.json'))
ip = np.load(d + '/indptr.npy'); ix = np.load(d + '/indices.npy').astype(np.int64)
types = meta['node_types']; off = np.cumsum([0] + [t['count'] for t in types])
X = np.zeros((off[-1], max(t['feature_dim'] for t in types)), np.float32)  # featureless types: zeros
for i, t in enumerate(types):
    if t['feature_dim']: X[off[i]:off[i+1], :t['feature_dim']] = np.load(d + f"/features_{t['name']}.npy")
y = np.load(d + '/labels.npy').astype(np.int64)
tr, va, te = [np.load(d + f'/{s}_idx.npy').astype(np.int64) for s in ('train', 'val', 'test')]
n = off[-1]; rows = np.repeat(np.arange(n), np.diff(ip))
tid = np.searchsorted(off, np.arange(n), side='right') - 1
import scipy.sparse as sp
def rel_mean(dst_type, H):
    m = tid[ix] == dst_type
    A = sp.csr_matrix((np.ones(m.sum(), np.float32), (rows[m], ix[m])), shape=(n, n))
    deg = np.asarray(A.sum(1)).ravel(); deg[deg == 0] = 1
    return (A @ H) / deg[:, None]
hops1 = [rel_mean(t, X) for t in range(len(types))]
H1 = sum(hops1)  # per dst type means, summed per node (each node sees its own relations)
hops2 = [rel_mean(t, H1) for t in range(len(types))]
def fit(F):
    F = torch.tensor(F); Y = torch.tensor(y)
    F = (F - F[tr].mean(0)) / (F[tr].std(0) + 1e-6)
    W = torch.nn.Linear(F.shape[1], int(y.max()) + 1); opt = torch.optim.Adam(W.parameters(), 1e-2, weight_decay=1e-4)
    best = (0, 0)
    for e in range(300):
        opt.zero_grad(); loss = torch.nn.functional.cross_entropy(W(F[tr]), Y[tr]); loss.backward(); opt.step()
        with torch.no_grad():
            p = W(F).argmax(1); v = (p[va] == Y[va]).float().mean().item(); t = (p[te] == Y[te]).float().mean().item()
            if v > best[0]: best = (v, t)
    return best
print('features only  val %.3f test %.3f' % fit(X))
print('1 hop          val %.3f test %.3f' % fit(np.hstack([X] + hops1)))
print('2 hops         val %.3f test %.3f' % fit(np.hstack([X] + hops1 + hops2)))
