!> grounded_structure: a linear structure tied to ground and driven at its boundary DOFs by
!> the rigid side's interface point -- the Fortran twin of the Python grounded FlexBody
!> (src/rbcosim/flex/body.py, grounded.py).
!>
!> Coordinates: physical [u_b; x_i]: n_b boundary DOFs (the first rows of M, K, C), then the
!> n_i interior DOFs. The Python body uses Craig-Bampton coordinates [u_b; eta]; with every
!> fixed-interface mode kept that is a change of basis of the interior, so the same
!> formulas on the physical matrices give the same motion (to rounding).
!>
!> Boundary DOFs follow the interface point from the reference pose (p_ref, q_ref), in the
!> structure axes -- the inertial axes for imported matrices: component c of the pair
!> (r - p_ref, theta) (m, rad; theta the rotation vector of q (x) conj(q_ref)), c = 1..6
!> for x y z rx ry rz. The interior obeys
!>   M_ii x_i'' + C_ii x_i' + K_ii x_i = -(M_ib u_b'' + C_ib u_b' + K_ib u_b),
!> i.e. y' = A y + B [u_b; u_b'; u_b''], y = [x_i; x_i'], with W = -M_ii^-1 [K_ii C_ii K_ib
!> C_ib M_ib]. Inside a macro step u_b(tau) is a degree-4 polynomial (the accelerations are
!> quadratic at most), so the step is exact: y(H) = Phi y(0) + Psi u, u = [d, v, c0, c1,
!> c2], with Phi and Psi from one matrix exponential of the Van Loan augmented matrix.
!> The wrench on the rigid body is minus the boundary rows of the equations of motion.
module grounded_structure
  use, intrinsic :: ieee_arithmetic, only: ieee_is_finite
  use dense, only: dp, expm, inverse, identity
  use interface_frame, only: acceleration_polynomial, frame_at, end_orientation, &
                             relative_rotation_vector
  implicit none
  private
  public :: grounded_body

  integer, parameter :: degree = 4  ! of u_b(tau)

  type :: grounded_body
    integer :: nb = 0, ni = 0        ! boundary and interior DOFs
    integer :: micro_steps = 1       ! RK4 steps of the orientation per macro step
    integer, allocatable :: comps(:) ! (nb) interface component 1..6 of each boundary DOF
    real(dp), allocatable :: w(:, :)     ! (ni, 2 ni + 3 nb): x_i'' = W [x_i; x_i'; u_b; u_b'; u_b'']
    real(dp), allocatable :: fb(:, :)    ! (nb, 3 nb + 3 ni): f_b = FB [u_b; u_b'; u_b''; x_i; x_i'; x_i'']
    real(dp), allocatable :: shift(:, :) ! (ni, nb) M_ii^-1 M_ib: interior move under a boundary move
    real(dp), allocatable :: jac_k(:, :), jac_c(:, :) ! (nb, nb) Z^T K Z, Z^T C Z, Z = [I; -shift]
    real(dp), allocatable :: prop(:, :)  ! (2 ni, 2 ni + 5 nb) [Phi, Psi] for step prop_h
    real(dp) :: prop_h = -1.0_dp         ! s
    ! state
    real(dp) :: t = 0.0_dp               ! s
    real(dp) :: frame(19) = 0.0_dp       ! r q v w a alpha the body assumes (see interface_frame)
    real(dp) :: p_ref(3) = 0.0_dp, q_ref(4) = [1.0_dp, 0.0_dp, 0.0_dp, 0.0_dp]
    real(dp), allocatable :: y(:)        ! (2 ni) [x_i (m, rad); x_i' (m/s, rad/s)]
  contains
    procedure :: setup, initialize, set_motion, step, wrench, added_mass, interface_jacobian
    procedure :: boundary, node_kinematics, frame_accelerations
    procedure, private :: wrench_with, build_propagator
  end type grounded_body

contains

  !> The body of matrices m, k, c (n x n, SI), the first nb rows boundary DOFs of
  !> interface components comps (1..6 = x y z rx ry rz); ok .false. if M_ii is singular.
  subroutine setup(self, m, k, c, comps, micro_steps, ok)
    class(grounded_body), intent(inout) :: self
    real(dp), intent(in) :: m(:, :), k(:, :), c(:, :)
    integer, intent(in) :: comps(:), micro_steps
    logical, intent(out) :: ok
    real(dp), allocatable :: minv(:, :), z(:, :)
    integer :: n, nb, ni
    n = size(m, 1)
    nb = size(comps)
    ni = n - nb
    self%nb = nb
    self%ni = ni
    self%comps = comps
    self%micro_steps = micro_steps
    allocate (minv(ni, ni))
    ok = .true.
    if (ni > 0) call inverse(m(nb + 1:, nb + 1:), minv, ok)
    if (.not. ok) return
    ! x_i'' = -M_ii^-1 (K_ii x_i + C_ii x_i' + K_ib u_b + C_ib u_b' + M_ib u_b'')
    allocate (self%w(ni, 2 * ni + 3 * nb))
    self%w(:, 1:ni) = -matmul(minv, k(nb + 1:, nb + 1:))
    self%w(:, ni + 1:2 * ni) = -matmul(minv, c(nb + 1:, nb + 1:))
    self%w(:, 2 * ni + 1:2 * ni + nb) = -matmul(minv, k(nb + 1:, 1:nb))
    self%w(:, 2 * ni + nb + 1:2 * ni + 2 * nb) = -matmul(minv, c(nb + 1:, 1:nb))
    self%w(:, 2 * ni + 2 * nb + 1:) = -matmul(minv, m(nb + 1:, 1:nb))
    ! f_b = K_bb u_b + C_bb u_b' + M_bb u_b'' + K_bi x_i + C_bi x_i' + M_bi x_i''
    self%fb = reshape([k(1:nb, 1:nb), c(1:nb, 1:nb), m(1:nb, 1:nb), &
                       k(1:nb, nb + 1:), c(1:nb, nb + 1:), m(1:nb, nb + 1:)], &
                      [nb, 3 * nb + 3 * ni])
    self%shift = matmul(minv, m(nb + 1:, 1:nb))
    allocate (z(n, nb))
    z(1:nb, :) = identity(nb)
    z(nb + 1:, :) = -self%shift
    self%jac_k = matmul(transpose(z), matmul(k, z))
    self%jac_c = matmul(transpose(z), matmul(c, z))
    allocate (self%y(2 * ni))
    self%y = 0.0_dp
    self%prop_h = -1.0_dp
  end subroutine setup

  !> Put the frame and the boundary reference at `motion` (19); x_i = 0, at rest.
  subroutine initialize(self, t0, motion)
    class(grounded_body), intent(inout) :: self
    real(dp), intent(in) :: t0, motion(19)
    self%t = t0
    call set_frame(self%frame, motion)
    self%p_ref = self%frame(1:3)
    self%q_ref = self%frame(4:7)
    self%y = 0.0_dp
  end subroutine initialize

  !> Move the frame to the rigid side's `motion` (19) keeping the interior's physical
  !> position and velocity: x_i -= M_ii^-1 M_ib du_b (regrounding, no advance).
  subroutine set_motion(self, motion)
    class(grounded_body), intent(inout) :: self
    real(dp), intent(in) :: motion(19)
    real(dp) :: before(self%nb, 3), du(self%nb, 3)
    integer :: ni
    ni = self%ni
    before = self%boundary()
    call set_frame(self%frame, motion)
    if (ni == 0) return
    du = self%boundary() - before
    self%y(1:ni) = self%y(1:ni) - matmul(self%shift, du(:, 1))
    self%y(ni + 1:) = self%y(ni + 1:) - matmul(self%shift, du(:, 2))
  end subroutine set_motion

  !> One macro step [t, t + h] (s) from the rigid side's `motion` (19) at t: regrounding,
  !> the accelerations through it and the `past` motions (19, m) at past_taus (s, from t),
  !> the interior exactly, the orientation by RK4. ok .false. if the result is not finite.
  subroutine step(self, t, h, motion, past_taus, past, ok)
    class(grounded_body), intent(inout) :: self
    real(dp), intent(in) :: t, h, motion(19), past_taus(:), past(:, :)
    logical, intent(out) :: ok
    real(dp) :: coeff(6, size(past_taus) + 1), q(4), f(18), bnd(self%nb, 3)
    real(dp) :: x(2 * self%ni + 5 * self%nb), ynew(2 * self%ni)
    integer :: ni, nb, i, j
    ni = self%ni
    nb = self%nb
    call self%set_motion(motion)
    coeff = acceleration_polynomial(motion, past_taus, past)
    associate (r => self%frame(1:3), v => self%frame(8:10), om => self%frame(11:13))
      q = end_orientation(self%frame(4:7), r, v, om, coeff, h, self%micro_steps)
      f = frame_at(r, v, om, coeff, h)
    end associate
    ynew = self%y
    if (ni > 0) then
      if (h /= self%prop_h) call self%build_propagator(h)
      bnd = self%boundary()
      x = 0.0_dp
      x(1:2 * ni) = self%y
      x(2 * ni + 1:2 * ni + nb) = bnd(:, 1)
      x(2 * ni + nb + 1:2 * ni + 2 * nb) = bnd(:, 2)
      do j = 1, size(coeff, 2)  ! acceleration coefficient c_(j-1), boundary components
        do i = 1, nb
          x(2 * ni + (1 + j) * nb + i) = coeff(self%comps(i), j)
        end do
      end do
      ynew = matmul(self%prop, x)
    end if
    ok = all(ieee_is_finite(q)) .and. all(ieee_is_finite(ynew))
    if (.not. ok) return
    self%frame(1:3) = f(1:3)
    self%frame(4:7) = q
    self%frame(8:10) = f(4:6)
    self%frame(11:13) = f(13:15)
    self%frame(14:16) = f(7:9)
    self%frame(17:19) = f(16:18)
    self%y = ynew
    self%t = t + h
  end subroutine step

  !> P = [Phi, Psi] for step h (s): the top block row of expm(M h), M the Van Loan matrix
  !> of y' = A y + w_0, w_j' = w_(j+1), w_4' = 0; Psi = sum_j j! Phi_j B L_j.
  subroutine build_propagator(self, h)
    class(grounded_body), intent(inout) :: self
    real(dp), intent(in) :: h
    integer :: d, ni, nb, j
    real(dp), allocatable :: big(:, :), top(:, :), b(:, :), psi(:, :)
    real(dp) :: fact
    ni = self%ni
    nb = self%nb
    d = 2 * ni
    allocate (big((degree + 2) * d, (degree + 2) * d), b(d, 3 * nb), psi(d, 5 * nb))
    big = 0.0_dp
    big(1:ni, ni + 1:d) = identity(ni)
    big(ni + 1:d, 1:d) = self%w(:, 1:d)
    do j = 0, degree
      big(j * d + 1:(j + 1) * d, (j + 1) * d + 1:(j + 2) * d) = identity(d)
    end do
    b = 0.0_dp
    b(ni + 1:d, :) = self%w(:, d + 1:)
    top = expm(big * h)
    top = top(1:d, :)
    psi = 0.0_dp
    fact = 1.0_dp
    do j = 0, degree
      if (j > 0) fact = fact * j
      psi = psi + fact * matmul(matmul(top(:, (j + 1) * d + 1:(j + 2) * d), b), input_map(j, nb))
    end do
    if (allocated(self%prop)) deallocate (self%prop)
    allocate (self%prop(d, d + 5 * nb))
    self%prop(:, 1:d) = top(:, 1:d)
    self%prop(:, d + 1:) = psi
    self%prop_h = h
  end subroutine build_propagator

  !> L_j (3 nb, 5 nb): u = [d, v, c0, c1, c2] -> the tau^j coefficient of [u_b; u_b'; u_b'']
  !> with u_b = d + v tau + c0 tau^2/2 + c1 tau^3/6 + c2 tau^4/12.
  pure function input_map(j, nb) result(l)
    integer, intent(in) :: j, nb
    real(dp) :: l(3 * nb, 5 * nb)
    integer :: rb, cb, i
    real(dp) :: fac(3, 5)  ! factor of (row block u_b u_b' u_b'', column block d v c0 c1 c2)
    fac = 0.0_dp
    select case (j)
    case (0)
      fac(1, 1) = 1.0_dp; fac(2, 2) = 1.0_dp; fac(3, 3) = 1.0_dp
    case (1)
      fac(1, 2) = 1.0_dp; fac(2, 3) = 1.0_dp; fac(3, 4) = 1.0_dp
    case (2)
      fac(1, 3) = 0.5_dp; fac(2, 4) = 0.5_dp; fac(3, 5) = 1.0_dp
    case (3)
      fac(1, 4) = 1.0_dp / 6.0_dp; fac(2, 5) = 1.0_dp / 3.0_dp
    case (4)
      fac(1, 5) = 1.0_dp / 12.0_dp
    end select
    l = 0.0_dp
    do cb = 1, 5
      do rb = 1, 3
        do i = 1, nb
          l((rb - 1) * nb + i, (cb - 1) * nb + i) = fac(rb, cb)
        end do
      end do
    end do
  end function input_map

  !> Boundary rows (nb, 3): columns u_b (m, rad), u_b' (m/s, rad/s), u_b'' (m/s^2, rad/s^2)
  !> at the current frame, structure (= inertial) components.
  pure function boundary(self) result(u)
    class(grounded_body), intent(in) :: self
    real(dp) :: u(self%nb, 3)
    real(dp) :: six(6, 3)
    six(1:3, 1) = self%frame(1:3) - self%p_ref
    six(4:6, 1) = relative_rotation_vector(self%frame(4:7), self%q_ref)
    six(1:3, 2) = self%frame(8:10)
    six(4:6, 2) = self%frame(11:13)
    six(:, 3) = self%frame(14:19)
    u = six(self%comps, :)
  end function boundary

  !> [force (3) N; moment (3) N m] on the rigid body at the interface point, inertial:
  !> -f_b at the current state.
  pure function wrench(self) result(out)
    class(grounded_body), intent(in) :: self
    real(dp) :: out(6)
    out = self%wrench_with(self%frame(14:19))
  end function wrench

  !> The wrench at the current state with the interface accelerations acc (6) instead.
  pure function wrench_with(self, acc) result(out)
    class(grounded_body), intent(in) :: self
    real(dp), intent(in) :: acc(6)
    real(dp) :: out(6)
    real(dp) :: bnd(self%nb, 3), x(3 * self%nb + 3 * self%ni), f(self%nb)
    integer :: nb, ni
    nb = self%nb
    ni = self%ni
    bnd = self%boundary()
    bnd(:, 3) = acc(self%comps)
    x(1:3 * nb) = reshape(bnd, [3 * nb])
    x(3 * nb + 1:3 * nb + 2 * ni) = self%y
    if (ni > 0) x(3 * nb + 2 * ni + 1:) = matmul(self%w, [self%y, x(1:3 * nb)])
    f = matmul(self%fb, x)
    out = 0.0_dp
    out(self%comps) = -f
  end function wrench_with

  !> Added mass M_a (6, 6), inertial: d wrench / d [a; alpha] = -M_a (exact, linear).
  pure function added_mass(self) result(ma)
    class(grounded_body), intent(in) :: self
    real(dp) :: ma(6, 6)
    real(dp) :: base(6), e(6)
    integer :: i
    base = self%wrench_with([(0.0_dp, i = 1, 6)])
    do i = 1, 6
      e = 0.0_dp
      e(i) = 1.0_dp
      ma(:, i) = base - self%wrench_with(e)
    end do
    ma = 0.5_dp * (ma + transpose(ma))
  end function added_mass

  !> (dF/dx, dF/dv), each (6, 6), inertial: the boundary moves, the interior stays.
  pure subroutine interface_jacobian(self, dx, dv)
    class(grounded_body), intent(in) :: self
    real(dp), intent(out) :: dx(6, 6), dv(6, 6)
    real(dp) :: sel(6, self%nb)
    integer :: i
    sel = 0.0_dp
    do i = 1, self%nb
      sel(self%comps(i), i) = 1.0_dp
    end do
    dx = -matmul(sel, matmul(self%jac_k, transpose(sel)))
    dv = -matmul(sel, matmul(self%jac_c, transpose(sel)))
  end subroutine interface_jacobian

  !> The joint node: r (m), q, v (m/s), w (rad/s) -- the wire's kinematics row (13).
  pure function node_kinematics(self) result(kin)
    class(grounded_body), intent(in) :: self
    real(dp) :: kin(13)
    kin = self%frame(1:13)
  end function node_kinematics

  !> [a (m/s^2); alpha (rad/s^2)] (6) the body assumes now, inertial.
  pure function frame_accelerations(self) result(acc)
    class(grounded_body), intent(in) :: self
    real(dp) :: acc(6)
    acc = self%frame(14:19)
  end function frame_accelerations

  !> frame = motion with the quaternion normalised.
  pure subroutine set_frame(frame, motion)
    real(dp), intent(out) :: frame(19)
    real(dp), intent(in) :: motion(19)
    frame = motion
    frame(4:7) = motion(4:7) / sqrt(sum(motion(4:7)**2))
  end subroutine set_frame

end module grounded_structure
