"""The model's value of each claim of :mod:`uneven.accuracy` (SI), as ``python -m uneven.accuracy
--refresh`` last computed them; tests/test_accuracy.py checks they are current."""

VALUES = {
    '01.fig5': 0.4400000000000002,
    '01.trace': 1.4193412917539079,
    '01.chapter': 1.4193412917539079,
    '02.static': 410.685166739768,
    '02.naive': 323.947297038782,
    '02.balanced': 172.8359873266274,
    '02.github': 7.127458389212133,
    '03.ep32': 66043688220.26729,
    '03.ep64': 56331429148.36143,
    '03.tpot': 0.014757119999999999,
    '03.planes': 1.0,
    '04.ablation': 1.1816565908936523,
    '04.tokens240': 248211.747555138,
    '04.tokens1440': 1254480.37652957,
    '04.speedup': 1.1807620677650768,
}
