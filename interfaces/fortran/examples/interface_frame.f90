!> interface_frame: the interface point's motion over one macro step, as the Python
!> reference (src/rbcosim/flex/frame.py, polynomial.py, kinematics.py) models it.
!>
!> A motion is 19 values, inertial, SI: position r (m), unit quaternion q (scalar first,
!> point frame -> inertial), velocity v (m/s), angular velocity w (rad/s), acceleration a
!> (m/s^2), angular acceleration alpha (rad/s^2) -- the wire's `motions` row.
!> Inside a step [t, t + H] the accelerations are a polynomial in tau = time - t with
!> coefficient columns c(:, j) (tau^(j-1)): [a; alpha](tau) = sum_j c(:, j) tau^(j-1);
!> velocities and positions are its exact integrals, the orientation follows
!> q' = [0, w] (x) q / 2 by classic RK4.
module interface_frame
  use dense, only: dp
  implicit none
  private
  public :: polynomial_through, exchange_polynomial, acceleration_polynomial, &
            frame_at, end_orientation, relative_rotation_vector

contains

  !> Coefficients c(:, j) of p(tau) = sum_j c(:, j) tau^(j-1) through values(:, i) at
  !> taus(i) (m <= 4 distinct times): Newton's divided differences expanded to monomials.
  pure function polynomial_through(taus, values) result(c)
    real(dp), intent(in) :: taus(:), values(:, :)
    real(dp) :: c(size(values, 1), size(values, 2))
    real(dp) :: d(size(values, 1), size(values, 2))
    integer :: m, i, j
    m = size(values, 2)
    d = values
    do j = 2, m
      do i = m, j, -1
        d(:, i) = (d(:, i) - d(:, i - 1)) / (taus(i) - taus(i - j + 1))
      end do
    end do
    c = 0.0_dp
    c(:, 1) = d(:, m)
    do j = m - 1, 1, -1  ! p = p (tau - taus(j)) + d_j
      do i = m, 2, -1
        c(:, i) = c(:, i - 1) - taus(j) * c(:, i)
      end do
      c(:, 1) = d(:, j) - taus(j) * c(:, 1)
    end do
  end function polynomial_through

  !> Wrench coefficients (6, size(known_taus) + count) in tau = time - t through `known`
  !> (columns at known_taus) and the newest `count` exchanged wrenches (columns of
  !> `wrenches`, newest first, at `times`, s).
  pure function exchange_polynomial(t, times, wrenches, count, known_taus, known) result(c)
    real(dp), intent(in) :: t, times(:), wrenches(:, :), known_taus(:), known(:, :)
    integer, intent(in) :: count
    real(dp) :: c(6, size(known_taus) + count)
    real(dp) :: taus(size(known_taus) + count), values(6, size(known_taus) + count)
    integer :: m
    m = size(known_taus)
    taus(1:m) = known_taus
    values(:, 1:m) = known
    taus(m + 1:) = times(1:count) - t
    values(:, m + 1:) = wrenches(:, 1:count)
    c = polynomial_through(taus, values)
  end function exchange_polynomial

  !> Acceleration coefficients (6, m + 1) through the accelerations of `motion` (19) at
  !> tau = 0 and of the past motions (19, m) at past_taus (s, relative to the step start).
  pure function acceleration_polynomial(motion, past_taus, past) result(c)
    real(dp), intent(in) :: motion(19), past_taus(:), past(:, :)
    real(dp) :: c(6, size(past_taus) + 1)
    real(dp) :: taus(size(past_taus) + 1), values(6, size(past_taus) + 1)
    taus(1) = 0.0_dp
    values(:, 1) = motion(14:19)
    taus(2:) = past_taus
    values(:, 2:) = past(14:19, :)
    c = polynomial_through(taus, values)
  end function acceleration_polynomial

  !> The frame at tau from its values at tau = 0 (r0, v0, w0) and the acceleration
  !> polynomial c: out = [r, v, a, theta, w, alpha] (18): position m, velocity m/s,
  !> acceleration m/s^2, rotation vector turned since tau = 0 (small rotations,
  !> theta' = w) rad, angular velocity rad/s, angular acceleration rad/s^2; inertial.
  pure function frame_at(r0, v0, w0, c, tau) result(out)
    real(dp), intent(in) :: r0(3), v0(3), w0(3), c(:, :), tau
    real(dp) :: out(18)
    real(dp) :: p, iv, ix
    integer :: j
    out(1:3) = r0 + v0 * tau
    out(4:6) = v0
    out(7:9) = 0.0_dp
    out(10:12) = w0 * tau
    out(13:15) = w0
    out(16:18) = 0.0_dp
    p = 1.0_dp  ! tau^(j-1)
    do j = 1, size(c, 2)
      iv = p * tau / j
      ix = iv * tau / (j + 1)
      out(1:3) = out(1:3) + ix * c(1:3, j)
      out(4:6) = out(4:6) + iv * c(1:3, j)
      out(7:9) = out(7:9) + p * c(1:3, j)
      out(10:12) = out(10:12) + ix * c(4:6, j)
      out(13:15) = out(13:15) + iv * c(4:6, j)
      out(16:18) = out(16:18) + p * c(4:6, j)
      p = p * tau
    end do
  end function frame_at

  !> q' = [0, w] (x) q / 2 (w inertial, rad/s).
  pure function quat_rate(w, q) result(dq)
    real(dp), intent(in) :: w(3), q(4)
    real(dp) :: dq(4)
    dq(1) = 0.5_dp * (-w(1) * q(2) - w(2) * q(3) - w(3) * q(4))
    dq(2) = 0.5_dp * (w(1) * q(1) - w(3) * q(3) + w(2) * q(4))
    dq(3) = 0.5_dp * (w(2) * q(1) + w(3) * q(2) - w(1) * q(4))
    dq(4) = 0.5_dp * (w(3) * q(1) - w(2) * q(2) + w(1) * q(3))
  end function quat_rate

  !> The orientation at tau = H from q0 (frame values r0, v0, w0 at tau = 0 and the
  !> acceleration polynomial c): n classic RK4 steps, normalised.
  pure function end_orientation(q0, r0, v0, w0, c, h_macro, n) result(q)
    real(dp), intent(in) :: q0(4), r0(3), v0(3), w0(3), c(:, :), h_macro
    integer, intent(in) :: n
    real(dp) :: q(4)
    real(dp) :: h, f0(18), fm(18), f1(18), k1(4), k2(4), k3(4), k4(4)
    integer :: i
    h = h_macro / n
    q = q0
    do i = 0, n - 1
      f0 = frame_at(r0, v0, w0, c, i * h)
      fm = frame_at(r0, v0, w0, c, (i + 0.5_dp) * h)
      f1 = frame_at(r0, v0, w0, c, (i + 1) * h)
      k1 = quat_rate(f0(13:15), q)
      k2 = quat_rate(fm(13:15), q + 0.5_dp * h * k1)
      k3 = quat_rate(fm(13:15), q + 0.5_dp * h * k2)
      k4 = quat_rate(f1(13:15), q + h * k3)
      q = q + (h / 6.0_dp) * (k1 + 2.0_dp * (k2 + k3) + k4)
    end do
    q = q / sqrt(sum(q * q))
  end function end_orientation

  !> Rotation vector (rad, angle in [0, pi]) of q (x) conj(q_ref), unit quaternions.
  pure function relative_rotation_vector(q, q_ref) result(theta)
    real(dp), intent(in) :: q(4), q_ref(4)
    real(dp) :: theta(3)
    real(dp) :: r(4), s
    r(1) = q(1) * q_ref(1) + q(2) * q_ref(2) + q(3) * q_ref(3) + q(4) * q_ref(4)
    r(2) = -q(1) * q_ref(2) + q(2) * q_ref(1) - q(3) * q_ref(4) + q(4) * q_ref(3)
    r(3) = -q(1) * q_ref(3) + q(2) * q_ref(4) + q(3) * q_ref(1) - q(4) * q_ref(2)
    r(4) = -q(1) * q_ref(4) - q(2) * q_ref(3) + q(3) * q_ref(2) + q(4) * q_ref(1)
    if (r(1) < 0.0_dp) r = -r
    s = sqrt(r(2)**2 + r(3)**2 + r(4)**2)
    if (s < 1.0e-12_dp) then
      theta = 2.0_dp * r(2:4)
    else
      theta = r(2:4) * (2.0_dp * atan2(s, r(1)) / s)
    end if
  end function relative_rotation_vector

end module interface_frame
