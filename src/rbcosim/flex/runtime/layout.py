"""Layout of a FlexBody's state vector (float64), shared by the body and its C kernels.

``[t | r (3) q (4) v (3) w (3) a (3) alpha (3) | p_ref (3) q_ref (4) | initialised | eta (k)
eta_dot (k)]``: time (s); the frame at the interface point (inertial position m, quaternion
scalar first point -> inertial, velocity m/s, angular velocity rad/s, acceleration m/s²,
angular acceleration rad/s², as the body currently assumes them); the reference pose of a
grounded body's boundary; 1.0 once initialised; the modal coordinates and their rates.
"""

T, R, Q, V, W, A, AL, PREF, QREF, INIT, ETA = 0, 1, 4, 8, 11, 14, 17, 20, 23, 27, 28
